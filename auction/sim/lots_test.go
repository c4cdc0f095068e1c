package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
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

// TestRenterFollowingSomeLots: a renter that follows 2 of a shard's 4
// lots sees only their digests and publishes on them, so an RFQ reaches
// no more providers than with every lot in view (fewer: a shard whose
// fitting offers all lie in other lots is not in its view), every
// provider still decides over its own lot's digests (ShouldBid checked
// against SelectBidders), and it still fills. What the smaller view costs
// renters is measured on the traces (scripts/sim-bounded.sh --policies
// idlegrid-lots --lots-seen K).
func TestRenterFollowingSomeLots(t *testing.T) {
	run := func(seen int) (bounded, lots Summary) {
		cfg := synthetic(400, 150, 0.6)
		cfg.FlakyShare = 0
		cfg.VerifyBidders = true
		cfg.Seeds = []uint64{1, 2}
		cfg.Policies = []string{PolicyBounded, PolicyLots}
		cfg.Lots, cfg.LotsSeen = 4, seen
		res, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return summaryOf(res, PolicyBounded), summaryOf(res, PolicyLots)
	}
	bounded, all := run(0)
	_, some := run(2)
	t.Logf("whole shards: cost %.2f fill %.4f reach/RFQ %.1f; every lot in view: cost %+.2f%% reach/RFQ %.1f; 2 of 4 followed: cost %+.2f%% fill %.4f bids/RFQ %.1f reach/RFQ %.1f",
		bounded.CostUSD.Mean, bounded.Fill.Mean, bounded.ReachPerRFQ.Mean,
		100*(all.CostUSD.Mean/bounded.CostUSD.Mean-1), all.ReachPerRFQ.Mean,
		100*(some.CostUSD.Mean/bounded.CostUSD.Mean-1), some.Fill.Mean, some.BidsPerRFQ.Mean, some.ReachPerRFQ.Mean)
	if some.ReachPerRFQ.Mean > all.ReachPerRFQ.Mean || some.ReachPerRFQ.Mean < 0.25*bounded.ReachPerRFQ.Mean {
		t.Errorf("an RFQ on the 2 of 4 lots its renter follows reached %.1f providers; with every lot in view %.1f, whole shards %.1f",
			some.ReachPerRFQ.Mean, all.ReachPerRFQ.Mean, bounded.ReachPerRFQ.Mean)
	}
	if some.Fill.Mean < 0.95*bounded.Fill.Mean {
		t.Errorf("2 followed lots filled %.4f, the whole shards %.4f", some.Fill.Mean, bounded.Fill.Mean)
	}
}

// TestRenterFollowsLotsFromItsOwn: a renter follows exactly seen lots,
// consecutive from the one its key hashes to, and renters spread evenly:
// over many renters each lot is followed by about seen/n of them.
func TestRenterFollowsLotsFromItsOwn(t *testing.T) {
	const n, seen, renters = 8, 3, 8000
	counts := make([]int, n)
	for r := range renters {
		ls := lotSplit{n: n, perRFQ: 2, seen: seen, renter: fmt.Sprintf("renter-%d", r)}
		start, followed := auction.Lot(ls.renter, n), 0
		for l := range n {
			if ls.follows(l) {
				followed++
				counts[l]++
				if d := (l - start + n) % n; d >= seen {
					t.Fatalf("renter %d (lot %d) follows lot %d, %d past its own", r, start, l, d)
				}
			}
		}
		if followed != seen {
			t.Fatalf("renter %d follows %d lots, want %d", r, followed, seen)
		}
	}
	for l, c := range counts {
		if want := renters * seen / n; math.Abs(float64(c-want)) > 0.1*float64(want) {
			t.Errorf("lot %d followed by %d renters, want about %d", l, c, want)
		}
	}
	all := lotSplit{n: n, perRFQ: 2, renter: "renter"}
	for l := range n {
		if !all.follows(l) {
			t.Errorf("a renter following every lot (seen 0) skips lot %d", l)
		}
	}
}
