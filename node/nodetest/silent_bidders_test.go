package nodetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
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
	t.Logf("cheap %s and %s, dear %s", cheap[0].Node.ID(), cheap[1].Node.ID(), dear.Node.ID())
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

// TestProvidersDropPrefixMembersThatNeverBid: two cheap providers win the
// first jobs, so every node counts them as proven, and then never bid
// again: the later jobs ask five minutes of notice, more than they give,
// which their digests do not show. They stay the cheapest in everyone's
// view and so fill the always-bid prefix of every RFQ. A provider holds
// no auctions of its own; before, the dear provider kept them in its
// prefix for good. Now it sees them missing from the award summaries of
// the RFQs whose prefix held them and drops them from its view (trust's
// prefix watch).
func TestProvidersDropPrefixMembersThatNeverBid(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}, {gpus: 2, bronze: 0.9, notice: 10 * time.Minute}},
		nodetest.Options{Configure: func(i int, cfg *node.Config) { cfg.Market.WantBids = 1 }})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	provs := c.ByRole(node.RoleProvider)
	slices.SortFunc(provs, func(a, b *nodetest.Member) int { return a.Index - b.Index })
	cheap, dear := provs[:2], provs[2]
	run := func(name, notice string) *store.Job {
		t.Helper()
		j, err := renter.Renter().Submit(jobYAML(jobOpts{name: name, gpus: 1, duration: "1s", minNotice: notice}))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnfilled, lease.JobFailed)
		if len(j.Leases) == 0 {
			t.Fatalf("job %s: %s (%s)", name, j.State, j.Reason)
		}
		return j
	}
	for i := range 4 {
		run(fmt.Sprintf("warm-%d", i), "")
	}
	inView := func() (n int) {
		for _, d := range dear.Node.Trust().Digests("") {
			if d.Peer == cheap[0].Node.ID().String() || d.Peer == cheap[1].Node.ID().String() {
				n++
			}
		}
		return n
	}
	if err := nodetest.WaitFor(ctx, "the dear provider to count the cheap ones as proven", func() bool { return inView() == 2 }); err != nil {
		t.Fatal(err)
	}
	// Each job draws no bid on its first round (the prefix is the cheap
	// ones) and the dear provider's on the next, which asks everyone: its
	// summary lists only the dear provider. Each step is logged (the
	// dear provider's misses and answers counted so far, the job's
	// rounds), so a run that never drops them says why.
	counts := func() string {
		var seen []string
		for _, d := range dear.Node.Trust().Digests("") {
			for _, m := range d.Models {
				seen = append(seen, fmt.Sprintf("%s…: %s free %d held %d of %d, $%.2f, %.1f s old",
					d.Peer[len(d.Peer)-6:], m.Model, m.Free, m.Held, m.Total, float64(d.Floor.Bronze)/1e6,
					time.Since(time.UnixMilli(d.IssuedAtMs)).Seconds()))
			}
		}
		return fmt.Sprintf("dear provider: %.0f prefix misses, %.0f answers, %d cheap in view; its view: %s",
			nodetest.CounterSum(t, dear.Registry, "idlegrid_trust_prefix_misses_total", "", ""),
			nodetest.CounterSum(t, dear.Registry, "idlegrid_trust_prefix_answers_total", "", ""), inView(),
			strings.Join(seen, "; "))
	}
	for i := 0; inView() > 0 && i < 3*auction.SilentAfter; i++ {
		j := run(fmt.Sprintf("notice-%d", i), "5m")
		l, err := renter.Store().GetLease(j.Leases[0])
		if err != nil || l.Provider != dear.Node.ID().String() {
			t.Fatalf("job %d leased on %v (%v), want the dear provider, the only one giving the notice", i, l, err)
		}
		var evs []string
		for _, e := range j.Events {
			evs = append(evs, e.Kind+": "+e.Message)
		}
		t.Logf("job %d: %s; %s; events: %s", i, j.State, counts(), strings.Join(evs, " | "))
	}
	if err := nodetest.WaitFor(ctx, "the cheap providers, which stopped bidding, to leave the dear provider's bid-selection view", func() bool { return inView() == 0 }); err != nil {
		t.Fatalf("%v; %s", err, counts())
	}
}
