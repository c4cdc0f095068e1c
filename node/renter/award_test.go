package renter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// startAward runs the award step of an auction whose window closed with
// bids, in the background, and returns the job's ID. The award step ends
// with the countersigned leases (the job driver would follow them).
func startAward(t *testing.T, r *Renter, spec *auction.JobSpec, rfq *auction.RFQ, rfqID string, bids []*auction.Bid, ids []string) string {
	t.Helper()
	jobID := "job-" + rfqID
	if err := r.jobs.create(&store.Job{ID: jobID, State: lease.JobAuctioning, CreatedAtMs: r.now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	pa := &pendingAuction{rfq: rfq, rfqID: rfqID, jobID: jobID, answered: map[string]bool{}, early: make(chan struct{})}
	roomtest.Run(t, func(ctx context.Context) error {
		r.auctioneer.award(ctx, pa, bids, ids, wholeJob(spec), nil)
		return nil
	})
	return jobID
}

func waitJobState(t *testing.T, r *Renter, jobID string, states ...string) *store.Job {
	t.Helper()
	var j *store.Job
	roomtest.Eventually(t, 10*time.Second, "job state "+states[0], func() bool {
		var err error
		if j, err = r.db.GetJob(jobID); err != nil {
			return false
		}
		for _, s := range states {
			if j.State == s {
				return true
			}
		}
		return false
	})
	return j
}

// TestAwardPassesToNextBestOnDecline: the cheapest bidder declines; the
// award goes to the next-best bid, whose lease is stored and named by the
// job, and the decline is in the job's history.
func TestAwardPassesToNextBestOnDecline(t *testing.T) {
	r, _, provs := newRenter(t, 2)
	cheap, dear := provs[0], provs[1]
	cheap.decline = "GPU is already leased"
	spec, rfq, rfqID := rfqFor(t, r, 1)
	b1, id1 := bid(t, cheap, rfq, rfqID, 1, 1.00)
	b2, id2 := bid(t, dear, rfq, rfqID, 1, 1.50)
	jobID := startAward(t, r, spec, rfq, rfqID, []*auction.Bid{b1, b2}, []string{id1, id2})
	j := waitJobState(t, r, jobID, lease.JobRunning)
	if len(j.Leases) != 1 {
		t.Fatalf("job names %d leases, want 1", len(j.Leases))
	}
	l, err := r.db.GetLease(j.Leases[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Provider != dear.ID.String() || l.Side != lease.SideRenter || l.PriceMicro < b2.PriceMicro {
		t.Fatalf("lease with %s at %d, want the next-best bid's provider at >= %d", l.Provider, l.PriceMicro, b2.PriceMicro)
	}
	// Each award is stored with what came of it, in one write, dated when
	// it went out; the lease event is dated when the lease was stored.
	var kinds []string
	var prev int64
	for _, ev := range j.Events {
		kinds = append(kinds, ev.Kind)
		if ev.AtMs < prev {
			t.Fatalf("event %s at %d, before the one ahead of it (%d): %+v", ev.Kind, ev.AtMs, prev, j.Events)
		}
		prev = ev.AtMs
		if ev.Kind == "lease" && ev.AtMs != l.UpdatedAtMs {
			t.Fatalf("lease event at %d, want when the lease was stored (%d)", ev.AtMs, l.UpdatedAtMs)
		}
	}
	want := []string{"award", "decline", "award", "lease", "running"}
	if len(kinds) < len(want) || !slices.Equal(kinds[len(kinds)-len(want):], want) {
		t.Fatalf("job events %v, want them to end %v", kinds, want)
	}
}

// TestAwardEveryWinnerDeclines: when every bidder declines, the job ends
// unfilled saying so, after one award per bidder.
func TestAwardEveryWinnerDeclines(t *testing.T) {
	r, _, provs := newRenter(t, 2)
	for _, p := range provs {
		p.decline = "busy"
	}
	spec, rfq, rfqID := rfqFor(t, r, 1)
	b1, id1 := bid(t, provs[0], rfq, rfqID, 1, 1.00)
	b2, id2 := bid(t, provs[1], rfq, rfqID, 1, 1.20)
	jobID := startAward(t, r, spec, rfq, rfqID, []*auction.Bid{b1, b2}, []string{id1, id2})
	j := waitJobState(t, r, jobID, lease.JobUnfilled)
	if j.Reason == "" {
		t.Fatal("unfilled job with no reason")
	}
	for _, p := range provs {
		p.mu.Lock()
		n := p.awards
		p.mu.Unlock()
		if n != 1 {
			t.Fatalf("provider got %d awards, want 1 (a decliner is not asked again)", n)
		}
	}
}
