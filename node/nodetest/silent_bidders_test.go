package nodetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// TestSilentExpectedBiddersFallBackToEveryone: the renter asks for one
// bid (market.want_bids 1); the two cheap providers it expects go dead to
// it (blocked), and the dear one, outside the cheap prefix, does not bid
// by the default rule. Before, jobs ended unfilled; now the renter runs
// the auction again at once asking every provider, and the RFQs after it
// ask everyone from the start: the dear provider leases every job.
func TestSilentExpectedBiddersFallBackToEveryone(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}, {gpus: 2, bronze: 0.9}},
		nodetest.Options{Configure: func(i int, cfg *node.Config) { cfg.Market.WantBids = 1 }})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	provs := c.ByRole(node.RoleProvider)
	slices.SortFunc(provs, func(a, b *nodetest.Member) int { return a.Index - b.Index })
	cheap, dear := provs[:2], provs[2]
	leaseOf := func(j *store.Job) string {
		l, err := renter.Store().GetLease(j.Leases[0])
		if err != nil {
			t.Fatal(err)
		}
		return l.Provider
	}
	// The cheap providers bid and win: everyone sees them bid.
	for i := range 4 {
		j, err := renter.Renter().Submit(jobYAML(jobOpts{name: fmt.Sprintf("warm-%d", i), gpus: 1, duration: "1s"}))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnfilled, lease.JobFailed)
		if len(j.Leases) == 0 {
			t.Fatalf("warm-up job %d: %s (%s)", i, j.State, j.Reason)
		}
	}
	for _, m := range cheap {
		renter.P2P().Block(m.Node.ID())
	}
	fellBack := 0
	for i := range 3 {
		j, err := renter.Renter().Submit(jobYAML(jobOpts{name: fmt.Sprintf("after-%d", i), gpus: 1, duration: "1s"}))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobRunning, lease.JobCompleted, lease.JobUnfilled, lease.JobFailed)
		if len(j.Leases) == 0 {
			for _, ev := range j.Events {
				t.Logf("  %s: %s", ev.Kind, ev.Message)
			}
			t.Fatalf("job %d with its expected bidders dead: %s (%s)", i, j.State, j.Reason)
		}
		if p := leaseOf(j); p != dear.Node.ID().String() {
			t.Fatalf("job %d leased on %s, want the dear provider", i, p)
		}
		for _, ev := range j.Events {
			if ev.Kind == "retry" && strings.Contains(ev.Message, "asking every provider") {
				fellBack++
			}
			t.Logf("job %d %s: %s", i, ev.Kind, ev.Message)
		}
		waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobFailed)
	}
	t.Logf("%d of 3 jobs fell back to every provider bidding", fellBack)
}
