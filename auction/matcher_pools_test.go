package auction

import (
	"slices"
	"testing"
)

// Tests of DefaultWeights: pools and single hosts ranked together, failure
// odds as expected cost, second price per model with a reserve.

func defaultInput(rfq *RFQ, bids ...*Bid) MatchInput {
	in := matchInput(rfq, bids...)
	in.Weights = DefaultWeights()
	in.Prior = 0.8 // reputation.DefaultConfig's: newcomers are not perfect
	return in
}

func TestMatchRankedPools(t *testing.T) {
	for _, tc := range []struct {
		name string
		bids []*Bid
		rep  map[string]float64
		want string
	}{
		{"cheaper pool beats a dear single host",
			[]*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_000_000, 2), matchBid("c", 2_000_000, 4)},
			nil, "a:2 b:2"},
		{"host premium favours one host at near-equal price",
			// Pool 4M × 1.02 = 4.08M > single 4.04M.
			[]*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_000_000, 2), matchBid("c", 1_010_000, 4)},
			nil, "c:4"},
		{"a flaky single host loses to a reliable pool",
			// c: 4M × (1 + 2·0.5) = 8M; pool: 4.4M × (1 + 2·(1 - 0.99²)) × 1.02 ≈ 4.58M.
			[]*Bid{matchBid("a", 1_100_000, 2), matchBid("b", 1_100_000, 2), matchBid("c", 1_000_000, 4)},
			map[string]float64{"a": 0.99, "b": 0.99, "c": 0.5}, "a:2 b:2"},
		{"pool reliability is the product of its members'",
			// Four 1-GPU hosts at 0.9 each: 1 - 0.9⁴ = 0.34 failure odds, so
			// one 0.8 host at the same price wins.
			[]*Bid{matchBid("a", 1_000_000, 1), matchBid("b", 1_000_000, 1), matchBid("c", 1_000_000, 1),
				matchBid("d", 1_000_000, 1), matchBid("e", 1_000_000, 4)},
			map[string]float64{"a": 0.9, "b": 0.9, "c": 0.9, "d": 0.9, "e": 0.8}, "e:4"},
		{"a newcomer at the prior wins when cheaper by its expected failure cost",
			// Newcomer n (prior 0.8): 2M × (1 + 2·0.2) = 2.8M; incumbent i:
			// 2.9M × 1.02 = 2.958M. Under price/reliability n would need to
			// be 20% cheaper, not 3.5%.
			[]*Bid{matchBid("n", 2_000_000, 4), matchBid("i", 2_900_000, 4)},
			map[string]float64{"i": 0.99, "n": 0.8}, "n:4"},
		{"a provider clearly below the prior is refused multi-GPU work at any price",
			// c at 0.7 is more than ExcludeBelowPrior (0.05) below the
			// prior 0.8: on probation, refused for 4 silver GPUs though its
			// 4M would beat the pool's 8.3M.
			[]*Bid{matchBid("a", 2_000_000, 2), matchBid("b", 2_000_000, 2), matchBid("c", 1_000_000, 4)},
			map[string]float64{"c": 0.7}, "a:2 b:2"},
		{"a provider just below the prior is priced, not refused",
			[]*Bid{matchBid("a", 2_000_000, 2), matchBid("b", 2_000_000, 2), matchBid("c", 1_000_000, 4)},
			map[string]float64{"c": 0.76}, "c:4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := defaultInput(matchRFQ(), tc.bids...)
			in.Reputation = tc.rep
			if got := allocSummary(Match(in)); got != tc.want {
				t.Fatalf("plan %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMatchSecondPricePerModelWithReserve(t *testing.T) {
	other := func(b *Bid) *Bid { b.Model = "h100-nvl-94gb"; b.VRAMMiB = 96_000; return b }
	for _, tc := range []struct {
		name     string
		bids     []*Bid
		reserve  map[string]uint64
		want     []uint64
		clearing uint64
	}{
		{"thin market clears at the reserve, not the maximum",
			[]*Bid{matchBid("a", 1_000_000, 4)}, map[string]uint64{"h100-80gb": 1_200_000}, []uint64{1_200_000}, 1_200_000},
		{"a loser below the reserve sets the price",
			[]*Bid{matchBid("a", 1_000_000, 4), matchBid("b", 1_100_000, 4)}, map[string]uint64{"h100-80gb": 1_200_000},
			[]uint64{1_100_000}, 1_100_000},
		{"never below the winner's own bid",
			[]*Bid{matchBid("a", 1_500_000, 4)}, map[string]uint64{"h100-80gb": 1_200_000}, []uint64{1_500_000}, 1_500_000},
		{"another model's loser does not set the price",
			[]*Bid{matchBid("a", 1_000_000, 4), other(matchBid("b", 2_500_000, 4))}, nil, []uint64{3_000_000}, 3_000_000},
		{"each model in a pool clears on its own",
			[]*Bid{matchBid("a", 1_000_000, 2), other(matchBid("b", 1_100_000, 2)), matchBid("c", 1_300_000, 2), other(matchBid("d", 1_400_000, 2))},
			nil, []uint64{1_300_000, 1_400_000}, 1_400_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rfq := matchRFQ()
			rfq.Pricing = PaySecond
			in := defaultInput(rfq, tc.bids...)
			in.ReserveMicro = tc.reserve
			p := Match(in)
			var got []uint64
			for _, a := range p.Allocations {
				got = append(got, a.PriceMicro)
			}
			if !slices.Equal(got, tc.want) || p.ClearingPriceMicro != tc.clearing {
				t.Fatalf("prices %v clearing %d, want %v clearing %d", got, p.ClearingPriceMicro, tc.want, tc.clearing)
			}
		})
	}
}
