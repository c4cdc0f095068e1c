package sim

import (
	"math"
	"testing"
)

// TestLotsSplitTheRFQs: with every shard split into 4 lots and each RFQ
// on the 2 with its cheapest fitting offers, an RFQ reaches about half
// its shards' providers, still draws about want_bids bids (decided lot by
// lot, every provider's ShouldBid checked against SelectBidders), and
// fills as many jobs. What lots cost renters is logged here and measured
// on the traces by scripts/sim-bounded.sh --policies idlegrid-bounded,idlegrid-lots.
func TestLotsSplitTheRFQs(t *testing.T) {
	cfg := synthetic(400, 150, 0.6)
	cfg.FlakyShare = 0
	cfg.VerifyBidders = true
	cfg.Policies = []string{PolicyBounded, PolicyLots}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bounded, lots := summaryOf(res, PolicyBounded), summaryOf(res, PolicyLots)
	t.Logf("bounded: cost %.2f fill %.4f bids/RFQ %.1f reach/RFQ %.1f; lots: cost %.2f (%+.2f%%) fill %.4f bids/RFQ %.1f reach/RFQ %.1f",
		bounded.CostUSD.Mean, bounded.Fill.Mean, bounded.BidsPerRFQ.Mean, bounded.ReachPerRFQ.Mean,
		lots.CostUSD.Mean, 100*(lots.CostUSD.Mean/bounded.CostUSD.Mean-1), lots.Fill.Mean, lots.BidsPerRFQ.Mean, lots.ReachPerRFQ.Mean)
	half := float64(DefaultLotsPerRFQ) / DefaultLots
	if got := lots.ReachPerRFQ.Mean / bounded.ReachPerRFQ.Mean; math.Abs(got-half) > 0.15 {
		t.Errorf("an RFQ on %d of %d lots reached %.2f of its shards' providers, want about %.2f", DefaultLotsPerRFQ, DefaultLots, got, half)
	}
	if lots.BidsPerRFQ.Mean < 0.75*bounded.BidsPerRFQ.Mean || lots.BidsPerRFQ.Mean > 1.5*bounded.BidsPerRFQ.Mean {
		t.Errorf("lots drew %.1f bids per RFQ, the whole shards %.1f", lots.BidsPerRFQ.Mean, bounded.BidsPerRFQ.Mean)
	}
	if lots.Fill.Mean < bounded.Fill.Mean {
		t.Errorf("lots filled %.4f, the whole shards %.4f", lots.Fill.Mean, bounded.Fill.Mean)
	}
}
