package sim

import (
	"testing"
)

// TestPrefixWatchSilencesPhantoms: phantoms (providers gossiping the
// cheapest digests of their shard and never bidding) take the places of
// the always-bid prefix, so the cheapest honest providers bid only by lot
// and RFQs draw half the bids they want. Silenced as the node silences
// them (3 auctions missed, silent 10 minutes after the last), each takes
// a place in about one auction per 10 minutes: bids and turnout come
// back, and the renter pays no more and fills as much as without them.
// Every provider's decision is checked against auction.ShouldBid,
// phantoms in the views.
func TestPrefixWatchSilencesPhantoms(t *testing.T) {
	run := func(phantoms int, noWatch bool) Summary {
		t.Helper()
		cfg := synthetic(400, 150, 0.6)
		cfg.FlakyShare = 0
		cfg.VerifyBidders = true
		cfg.Policies = []string{PolicyBounded}
		cfg.Phantoms, cfg.NoPrefixWatch = phantoms, noWatch
		res, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return summaryOf(res, PolicyBounded)
	}
	clean, watched, unwatched := run(0, false), run(8, false), run(8, true)
	for _, r := range []struct {
		name string
		s    Summary
	}{{"no phantoms", clean}, {"8 phantoms a shard, watched", watched}, {"8 phantoms a shard, never silenced", unwatched}} {
		t.Logf("%s: cost %.2f fill %.4f bids/RFQ %.1f phantoms/RFQ %.2f turnout %.3f", r.name,
			r.s.CostUSD.Mean, r.s.Fill.Mean, r.s.BidsPerRFQ.Mean, r.s.PhantomsPerRFQ.Mean, r.s.Turnout.Mean)
	}
	if clean.PhantomsPerRFQ.Mean != 0 || unwatched.PhantomsPerRFQ.Mean < 4 || unwatched.Turnout.Mean > 0.75*clean.Turnout.Mean {
		t.Fatalf("never silenced: %.2f phantoms per RFQ, turnout %.3f against %.3f: the fixture shows no harm to prevent",
			unwatched.PhantomsPerRFQ.Mean, unwatched.Turnout.Mean, clean.Turnout.Mean)
	}
	if watched.PhantomsPerRFQ.Mean > 1.5 || watched.BidsPerRFQ.Mean < 0.9*clean.BidsPerRFQ.Mean || watched.Turnout.Mean < clean.Turnout.Mean-0.05 {
		t.Errorf("silenced by the watch: %.2f phantoms per RFQ, %.1f bids per RFQ, turnout %.3f; without phantoms %.1f bids, turnout %.3f",
			watched.PhantomsPerRFQ.Mean, watched.BidsPerRFQ.Mean, watched.Turnout.Mean, clean.BidsPerRFQ.Mean, clean.Turnout.Mean)
	}
	if watched.CostUSD.Mean > 1.01*clean.CostUSD.Mean || watched.Fill.Mean < clean.Fill.Mean-0.001 {
		t.Errorf("silenced by the watch: cost %.2f fill %.4f, against %.2f %.4f without phantoms",
			watched.CostUSD.Mean, watched.Fill.Mean, clean.CostUSD.Mean, clean.Fill.Mean)
	}
}
