package provider

import (
	"context"
	"testing"
)

// TestNoDigestBeforeTheFirstRecord: a provider gossips no capacity digest
// until its first capacity record is out, so that every peer checking the
// digest finds the record (and can ask this provider for it); from then
// on each digest names that record.
func TestNoDigestBeforeTheFirstRecord(t *testing.T) {
	r := newRoom(t, 1)
	ctx := context.Background()
	if r.p.digest.send(ctx, false) {
		t.Fatal("a digest went out before any capacity record")
	}
	if r.p.SealedCapacity() != nil {
		t.Fatal("a sealed record before the first publish")
	}
	rec, err := r.p.adv.build(7)
	if err != nil {
		t.Fatal(err)
	}
	r.p.adv.mu.Lock()
	r.p.adv.current, r.p.adv.sealed = rec, []byte("sealed")
	r.p.adv.mu.Unlock()
	if !r.p.digest.send(ctx, false) {
		t.Fatal("no digest went out once a record was published")
	}
}
