package renter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// replicaRenter is a renter with four providers whose capacity records
// back their bids, under the hardware fingerprints given.
func replicaRenter(t *testing.T, fingerprints ...string) (*Renter, []*fakeProvider) {
	t.Helper()
	r, _, provs := newRenter(t, len(fingerprints))
	fp := map[string]string{}
	for i, p := range provs {
		fp[p.ID.String()] = fingerprints[i]
	}
	r.auctioneer.awarder.record = func(_ context.Context, id peer.ID) (*auction.Capacity, error) {
		c := &auction.Capacity{Peer: id.String(), Region: auction.Region{Country: "de"}, FingerprintID: fp[id.String()],
			ExpiresAtMs: r.now().Add(time.Hour).UnixMilli()}
		for i := range 2 {
			c.GPUs = append(c.GPUs, auction.GPU{UUID: "GPU-" + id.String()[len(id.String())-6:] + "-" + string(rune('0'+i)), Model: "h100-sxm-80gb"})
		}
		return c, nil
	}
	return r, provs
}

func awardsOf(p *fakeProvider) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.awards
}

// TestReplicasGoToIndependentHosts: a job with replicas: 2. The
// cheapest bid wins replica 1; the next-cheapest is the same machine
// under another key (same fingerprint) and is never offered an award;
// the next declines, so replica 2 passes to the last. Each replica is
// one lease, named in the job's history.
func TestReplicasGoToIndependentHosts(t *testing.T) {
	r, provs := replicaRenter(t, "fp-a", "fp-a", "fp-b", "fp-c")
	provs[2].decline = "busy"
	spec, rfq, rfqID := rfqFor(t, r, 1)
	spec.Replicas = 2
	var bids []*auction.Bid
	var ids []string
	for i, p := range provs {
		b, id := bid(t, p, rfq, rfqID, 1, 1.0+0.1*float64(i))
		bids, ids = append(bids, b), append(ids, id)
	}
	j := waitJobState(t, r, startAward(t, r, spec, rfq, rfqID, bids, ids), lease.JobRunning)
	if len(j.Leases) != 2 {
		t.Fatalf("job names %d leases, want one per replica", len(j.Leases))
	}
	var got []string
	for _, id := range j.Leases {
		l, err := r.db.GetLease(id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Provider)
	}
	if got[0] != provs[0].ID.String() || got[1] != provs[3].ID.String() {
		t.Fatalf("replicas on %v, want the cheapest and, past the same machine and a decline, the last", got)
	}
	if n := awardsOf(provs[1]); n != 0 {
		t.Fatalf("the cheapest's machine under another key got %d awards, want none", n)
	}
	replicas := 0
	for _, ev := range j.Events {
		if ev.Kind == "replica" {
			replicas++
		}
	}
	if replicas != 2 {
		t.Fatalf("%d replica events, want 2: %+v", replicas, j.Events)
	}
}

// TestTooFewIndependentHostsAwardNothing: replicas: 3 with three bids
// from two machines ends unfilled, saying why, before any award.
func TestTooFewIndependentHostsAwardNothing(t *testing.T) {
	r, provs := replicaRenter(t, "fp-a", "fp-a", "fp-b")
	spec, rfq, rfqID := rfqFor(t, r, 1)
	spec.Replicas = 3
	var bids []*auction.Bid
	var ids []string
	for i, p := range provs {
		b, id := bid(t, p, rfq, rfqID, 1, 1.0+0.1*float64(i))
		bids, ids = append(bids, b), append(ids, id)
	}
	j := waitJobState(t, r, startAward(t, r, spec, rfq, rfqID, bids, ids), lease.JobUnfilled)
	if !strings.Contains(j.Reason, "replicas: 3 needs 3 independent providers") || !strings.Contains(j.Reason, "same hardware fingerprint") {
		t.Fatalf("reason %q, want the count and the host passed over", j.Reason)
	}
	for i, p := range provs {
		if n := awardsOf(p); n != 0 {
			t.Fatalf("provider %d got %d awards, want none", i, n)
		}
	}
}
