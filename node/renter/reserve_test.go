package renter

import (
	"errors"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestSecondPriceReserveFromIndex: the awarder gives a second-price RFQ
// the price index's median per model as its reserve (the spec has no
// reserve of its own), reading the last 24 hours of the index; a
// first-price RFQ, or a failing index, gets none.
func TestSecondPriceReserveFromIndex(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	var since time.Time
	var fail error
	ar := &awarder{awarderDeps: awarderDeps{
		log: slog.New(slog.DiscardHandler), now: func() time.Time { return now },
		priceIndex: func(s, u time.Time) ([]auction.PriceStat, error) {
			since = s
			return []auction.PriceStat{{Model: "a10-24gb", Tier: auction.TierSilver, GPUs: 3, MedianMicro: 600_000}}, fail
		},
	}}
	rfq := &auction.RFQ{Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}}, Tier: auction.TierSilver, Pricing: auction.PayBid}
	if got := ar.reserves(rfq); got != nil {
		t.Fatalf("first price: reserve %v", got)
	}
	rfq.Pricing = auction.PaySecond
	if got, want := ar.reserves(rfq), map[string]uint64{"a10-24gb": 600_000}; !maps.Equal(got, want) {
		t.Fatalf("reserve %v, want %v", got, want)
	}
	if since != now.Add(-24*time.Hour) {
		t.Fatalf("index read from %v, want the last 24 hours", since)
	}
	fail = errors.New("store closed")
	if got := ar.reserves(rfq); got != nil {
		t.Fatalf("failing index: reserve %v", got)
	}
}
