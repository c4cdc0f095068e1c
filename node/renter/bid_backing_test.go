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

// recordOf is the capacity record that backs b.
func recordOf(b *auction.Bid, now time.Time) *auction.Capacity {
	c := &auction.Capacity{
		V: auction.CapacityVersion, Peer: b.Provider, ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Region: auction.Region{Country: b.Region}, FingerprintID: "bafkreifingerprint",
	}
	for _, u := range b.GPUs {
		c.GPUs = append(c.GPUs, auction.GPU{UUID: u, Model: b.Model})
	}
	return c
}

// TestUnbackedBidLoses: the cheapest bid names a GPU its provider's
// capacity record does not list; the award goes to the backed bid and the
// job's history says why the cheaper one was refused. With only the
// unbacked bid, the job ends unfilled naming the reason.
func TestUnbackedBidLoses(t *testing.T) {
	r, _, provs := newRenter(t, 2)
	cheap, dear := provs[0], provs[1]
	spec, rfq, rfqID := rfqFor(t, r, 1)
	b1, id1 := bid(t, cheap, rfq, rfqID, 1, 1.00)
	b2, id2 := bid(t, dear, rfq, rfqID, 1, 1.50)
	records := map[string]*auction.Capacity{b2.Provider: recordOf(b2, r.now())}
	lying := recordOf(b1, r.now())
	lying.GPUs[0].UUID = "GPU-the-real-one"
	records[b1.Provider] = lying
	r.auctioneer.awarder.record = func(_ context.Context, id peer.ID) (*auction.Capacity, error) {
		return records[id.String()], nil
	}
	jobID := startAward(t, r, spec, rfq, rfqID, []*auction.Bid{b1, b2}, []string{id1, id2})
	j := waitJobState(t, r, jobID, lease.JobRunning, lease.JobUnfilled)
	if j.State != lease.JobRunning || len(j.Leases) != 1 {
		t.Fatalf("job %s %q with %d leases", j.State, j.Reason, len(j.Leases))
	}
	if l, err := r.db.GetLease(j.Leases[0]); err != nil || l.Provider != dear.ID.String() {
		t.Fatalf("lease %+v, %v: want the backed bid's provider", l, err)
	}
	found := false
	for _, ev := range j.Events {
		found = found || ev.Kind == "unbacked" && strings.Contains(ev.Message, "not in the provider's record")
	}
	if !found {
		t.Fatalf("no unbacked event in %+v", j.Events)
	}

	_, rfq2, rfqID2 := rfqFor(t, r, 1)
	b3, id3 := bid(t, cheap, rfq2, rfqID2, 1, 1.00)
	delete(records, b3.Provider) // no record at all
	jobID = startAward(t, r, spec, rfq2, rfqID2, []*auction.Bid{b3}, []string{id3})
	j = waitJobState(t, r, jobID, lease.JobRunning, lease.JobUnfilled)
	if j.State != lease.JobUnfilled || !strings.Contains(j.Reason, "unbacked (no capacity record") {
		t.Fatalf("job %s %q, want unfilled naming the unbacked bid", j.State, j.Reason)
	}
}
