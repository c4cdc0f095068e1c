package auction

import (
	"slices"
	"testing"
)

// cpuRFQ is a CPU-only request: no GPU, two cores.
func cpuRFQ() *RFQ {
	r := matchRFQ()
	r.Resources = Resources{CPUCores: 2, RAMMiB: 1024}
	r.Runtime = RuntimeWasm
	return r
}

// cpuBid is a CPU-only bid from prov at price.
func cpuBid(prov string, price uint64) *Bid {
	b := matchBid(prov, price, 0)
	b.Model, b.VRAMMiB = CPUModel, 0
	return b
}

func TestMatchCPUOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		bids       []*Bid
		winner     string // "": unfilled
		backups    []int
		rejectCode map[int]string
	}{
		{name: "cheapest CPU bid wins alone", bids: []*Bid{cpuBid("a", 300), cpuBid("b", 200), cpuBid("c", 250)},
			winner: "b", backups: []int{2, 0}},
		{name: "a GPU bid cannot fill a CPU-only request", bids: []*Bid{matchBid("g", 100, 2), cpuBid("a", 300)},
			winner: "a", rejectCode: map[int]string{0: RejectNoGPUs}},
		{name: "no CPU bid leaves it unfilled", bids: []*Bid{matchBid("g", 100, 2)},
			rejectCode: map[int]string{0: RejectNoGPUs}},
		{name: "above the max price", bids: []*Bid{cpuBid("a", 4_000_000)},
			rejectCode: map[int]string{0: RejectPrice}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Match(matchInput(cpuRFQ(), tc.bids...))
			if tc.winner == "" {
				if p.Unfilled == "" || len(p.Allocations) != 0 {
					t.Fatalf("want unfilled, plan = %+v", p)
				}
			} else {
				if len(p.Allocations) != 1 || p.Allocations[0].Provider != tc.winner || len(p.Allocations[0].GPUs) != 0 {
					t.Fatalf("allocations = %+v, want one GPU-less allocation to %s", p.Allocations, tc.winner)
				}
				if w := tc.bids[p.Allocations[0].BidIndex]; p.Allocations[0].PriceMicro != w.PriceMicro {
					t.Errorf("price %d, want the bid's %d", p.Allocations[0].PriceMicro, w.PriceMicro)
				}
			}
			if tc.backups != nil && !slices.Equal(p.Backups, tc.backups) {
				t.Errorf("backups = %v, want %v", p.Backups, tc.backups)
			}
			for idx, code := range tc.rejectCode {
				i := slices.IndexFunc(p.Losers, func(r Rejection) bool { return r.BidIndex == idx })
				if i < 0 || p.Losers[i].Code != code {
					t.Errorf("bid %d: losers %+v, want code %s", idx, p.Losers, code)
				}
			}
		})
	}
}

func TestMatchGPURequestRejectsCPUBid(t *testing.T) {
	p := Match(matchInput(matchRFQ(), cpuBid("a", 100), matchBid("b", 200, 4)))
	if len(p.Allocations) != 1 || p.Allocations[0].Provider != "b" {
		t.Fatalf("allocations = %+v, want b's GPUs", p.Allocations)
	}
	if p.Losers[0].BidIndex != 0 || p.Losers[0].Code != RejectNoGPUs {
		t.Fatalf("losers = %+v", p.Losers)
	}
}
