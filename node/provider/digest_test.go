package provider

import (
	"context"
	"testing"
	"time"
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

// TestDigestRefreshStretchesInLargeShards: the digester refreshes every
// minute (or half the republish interval) in a small shard, and less often
// in a large one, up to a third of the record's TTL, as its market view
// grows.
func TestDigestRefreshStretchesInLargeShards(t *testing.T) {
	size := 0
	d := newDigester(digesterDeps{republish: 10 * time.Minute, ttl: 30 * time.Minute, shardSize: func() int { return size }})
	for _, c := range []struct {
		providers int
		want      time.Duration
	}{
		{0, time.Minute}, {50, time.Minute}, {1000, 500 * time.Second}, {20_000, 10 * time.Minute},
	} {
		size = c.providers
		if got := d.refresh(); got != c.want {
			t.Errorf("%d providers: refresh %v, want %v", c.providers, got, c.want)
		}
	}
	short := newDigester(digesterDeps{republish: 4 * time.Second, ttl: 30 * time.Second, shardSize: func() int { return 20_000 }})
	if got := short.refresh(); got != 10*time.Second {
		t.Errorf("a devnet's 4s republish and 30s TTL in a large shard: refresh %v, want 10s", got)
	}
}
