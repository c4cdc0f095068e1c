package nodetest

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/node/trust"
)

// The renter's market view in BenchmarkAuction: how long until its digest
// book holds every provider, and what it holds then.

// auctionViewWait bounds the wait for a renter's market view.
var auctionViewWait = flag.Duration("auctionbench.viewwait", 3*time.Minute,
	"longest wait for a renter's digest book to hold every provider backed (then the benchmark goes on with what it has)")

// marketView is how far a renter's view came.
type marketView struct {
	counts   trust.ViewCounts
	want     int
	complete bool
	unbacked float64 // digest_unbacked charges by r so far
}

func (v marketView) String() string {
	state := "complete"
	if !v.complete {
		state = "INCOMPLETE"
	}
	return fmt.Sprintf("%s, %d of %d providers backed (%d proven, %d held), %.0f digest_unbacked charges", state,
		v.counts.Backed, v.want, v.counts.Proven, v.counts.Held, v.unbacked)
}

// waitView waits, at most -auctionbench.viewwait, until r's digest book
// holds want providers backed by a checked capacity record (what a renter
// expects bids from; proven ones need bids seen first).
func waitView(ctx context.Context, m *Member, want int) marketView {
	r := m.Node
	wctx, cancel := context.WithTimeout(ctx, *auctionViewWait)
	defer cancel()
	err := WaitFor(wctx, fmt.Sprintf("%d backed providers in the digest book", want), func() bool {
		return r.Trust().MarketView().Backed >= want
	})
	v := marketView{counts: r.Trust().MarketView(), want: want, complete: err == nil}
	if mfs, err := m.Registry.Gather(); err == nil {
		for _, mf := range mfs {
			if mf.GetName() != "idlegrid_p2p_abuse_events_total" {
				continue
			}
			for _, met := range mf.GetMetric() {
				for _, lp := range met.GetLabel() {
					if lp.GetValue() == string(trust.AbuseDigestUnbacked) {
						v.unbacked += met.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return v
}
