package auction

import (
	"strings"
	"testing"
	"time"
)

// backingRecord is x's current record backing matchBid("x", _, 2).
func backingRecord() *Capacity {
	return &Capacity{
		V: CapacityVersion, Peer: "x", ExpiresAtMs: fixedNow.Add(time.Hour).UnixMilli(),
		Region:        Region{Country: "de"},
		FingerprintID: "bafkreifingerprint",
		GPUs: []GPU{
			{UUID: "GPU-x-0", Model: "h100-80gb"}, {UUID: "GPU-x-1", Model: "h100-80gb"}, {UUID: "GPU-x-2", Model: "a10"},
		},
	}
}

func TestBidBacking(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(b *Bid, c **Capacity)
		want string // "" backed, else a part of the reason
	}{
		{"backed", func(*Bid, **Capacity) {}, ""},
		{"no record", func(_ *Bid, c **Capacity) { *c = nil }, "no capacity record"},
		{"another's record", func(_ *Bid, c **Capacity) { (*c).Peer = "y" }, "not the bidder's"},
		{"expired record", func(_ *Bid, c **Capacity) { (*c).ExpiresAtMs = fixedNow.UnixMilli() }, "expired"},
		{"other region", func(b *Bid, _ **Capacity) { b.Region = "us" }, `region "us"`},
		{"no fingerprint", func(_ *Bid, c **Capacity) { (*c).FingerprintID = "" }, "no hardware fingerprint"},
		{"made-up GPU", func(b *Bid, _ **Capacity) { b.GPUs[1] = "GPU-made-up" }, "GPU-made-up is not in"},
		{"other model", func(b *Bid, _ **Capacity) { b.GPUs[1] = "GPU-x-2" }, "is a a10"},
		{"cpu bid without a CPU offer", func(b *Bid, _ **Capacity) { b.GPUs = nil }, "no CPU share"},
		{"cpu bid with a CPU offer", func(b *Bid, c **Capacity) { b.GPUs = nil; (*c).CPU = &CPUOffer{} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := matchBid("x", 1, 2), backingRecord()
			tc.edit(b, &c)
			got := BidBacking(b, c, fixedNow)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("BidBacking = %q, want %q", got, tc.want)
			}
		})
	}
}
