package sim

import (
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// TestBoundedBiddingCostsNothing is issue 12's claim on a small market:
// with want_bids 16 over shards of about 50 providers, so that most
// feasible providers stay silent, the renter pays at most 1% more and
// fills no less than when everyone bids. Every provider's decision is
// also checked against auction.ShouldBid.
func TestBoundedBiddingCostsNothing(t *testing.T) {
	cfg := synthetic(400, 150, 0.6)
	cfg.FlakyShare = 0
	cfg.VerifyBidders = true
	cfg.Policies = []string{PolicyIdlegrid, PolicyBounded}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	every, bounded := summaryOf(res, PolicyIdlegrid), summaryOf(res, PolicyBounded)
	t.Logf("everyone bids: cost %.2f fill %.4f bids/RFQ %.1f; bounded: cost %.2f fill %.4f bids/RFQ %.1f of %.1f feasible",
		every.CostUSD.Mean, every.Fill.Mean, every.BidsPerRFQ.Mean,
		bounded.CostUSD.Mean, bounded.Fill.Mean, bounded.BidsPerRFQ.Mean, bounded.FeasiblePerRFQ.Mean)
	// The proof is empty unless bounding cuts bids.
	if bounded.BidsPerRFQ.Mean > every.BidsPerRFQ.Mean/2 || bounded.BidsPerRFQ.Mean > 2*auction.DefaultWantBids {
		t.Errorf("bounded drew %.1f bids per RFQ against %.1f: the fixture does not bound anything", bounded.BidsPerRFQ.Mean, every.BidsPerRFQ.Mean)
	}
	for _, m := range res.Runs {
		if m.Policy != PolicyBounded {
			continue
		}
		for _, e := range res.Runs {
			if e.Policy != PolicyIdlegrid || e.Seed != m.Seed {
				continue
			}
			if m.CostUSD > 1.01*e.CostUSD || m.Fill < e.Fill {
				t.Errorf("seed %d: bounded cost %.2f fill %.4f, everyone bids %.2f fill %.4f", m.Seed, m.CostUSD, m.Fill, e.CostUSD, e.Fill)
			}
		}
	}
}

// summaryOf is the summary of policy in res (zero if it did not run).
func summaryOf(res Result, policy string) Summary {
	for _, s := range res.Summary {
		if s.Policy == policy {
			return s
		}
	}
	return Summary{}
}
