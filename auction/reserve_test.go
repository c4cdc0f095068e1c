package auction

import (
	"maps"
	"testing"
)

func TestSecondPriceReserves(t *testing.T) {
	index := []PriceStat{
		{Model: "h100-80gb", Tier: TierSilver, GPUs: 10, MedianMicro: 2_000_000},
		{Model: "h100-80gb", Tier: TierGold, GPUs: 10, MedianMicro: 2_600_000},
		{Model: "a10-24gb", Tier: TierSilver, GPUs: 10, MedianMicro: 500_000},
		{Model: "h100-nvl-94gb", Tier: TierSilver, GPUs: 1, MedianMicro: 0},
	}
	rfq := matchRFQ() // silver, h100
	if got := SecondPriceReserves(rfq, index); got != nil {
		t.Fatalf("first price: reserves %v, want none", got)
	}
	rfq.Pricing = PaySecond
	want := map[string]uint64{"h100-80gb": 2_000_000} // the RFQ's tier and models only
	if got := SecondPriceReserves(rfq, index); !maps.Equal(got, want) {
		t.Fatalf("reserves %v, want %v", got, want)
	}
	if got := SecondPriceReserves(rfq, nil); got != nil {
		t.Fatalf("empty index: reserves %v, want none", got)
	}
}

// TestSecondPriceSingleBidderClearsAtReserve: with one bidder there is no
// second bid, so without a reserve the winner is paid the renter's
// maximum; with the index's reserve it is paid at most the reserve (and
// never less than its own bid).
func TestSecondPriceSingleBidderClearsAtReserve(t *testing.T) {
	index := []PriceStat{{Model: "h100-80gb", Tier: TierSilver, GPUs: 10, MedianMicro: 2_000_000}}
	for _, tc := range []struct {
		name      string
		bid, want uint64
	}{
		{"bid under the reserve: paid the reserve", 1_500_000, 2_000_000},
		{"bid over the reserve: paid its bid", 2_400_000, 2_400_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rfq := matchRFQ()
			rfq.Pricing = PaySecond
			in := defaultInput(rfq, matchBid("a", tc.bid, 4))
			if p := Match(in); p.ClearingPriceMicro != rfq.MaxPriceMicro {
				t.Fatalf("without a reserve: clearing %d, want the maximum %d", p.ClearingPriceMicro, rfq.MaxPriceMicro)
			}
			in.ReserveMicro = SecondPriceReserves(rfq, index)
			p := Match(in)
			if len(p.Allocations) != 1 || p.ClearingPriceMicro != tc.want || p.Allocations[0].PriceMicro != tc.want {
				t.Fatalf("plan %+v, want one winner paid %d", p, tc.want)
			}
			if tc.bid <= index[0].MedianMicro && p.ClearingPriceMicro > index[0].MedianMicro {
				t.Fatalf("cleared %d above the reserve %d", p.ClearingPriceMicro, index[0].MedianMicro)
			}
		})
	}
}
