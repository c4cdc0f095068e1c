package auction

import (
	"strings"
	"testing"
)

func TestExplainNoBids(t *testing.T) {
	h100 := &Capacity{
		Peer: "p-h100", Region: Region{Country: "de"}, Runtimes: []string{RuntimeWasm},
		GPUs:  []GPU{{Model: "h100-80gb", VRAMMiB: 81559, ComputeCap: "9.0", Free: true}},
		Floor: FloorPrice{Gold: 3_200_000, Silver: 2_490_000, Bronze: 1_890_000},
	}
	busy := &Capacity{
		Peer: "p-a100", Region: Region{Country: "fr"}, Runtimes: []string{RuntimeWasm},
		GPUs:  []GPU{{Model: "a100-80gb", VRAMMiB: 81920, ComputeCap: "8.0", LeaseID: "l1"}},
		Floor: FloorPrice{Silver: 1_690_000},
	}
	view := []*Capacity{h100, busy}
	rel := func(string) float64 { return 0.5 }
	rfq := func(edit func(r *RFQ)) *RFQ {
		r := &RFQ{Resources: Resources{GPUs: 1, Models: []string{"h100"}}, Runtime: RuntimeWasm,
			Tier: TierSilver, MaxPriceMicro: 3_000_000, BidWindowMs: 500}
		edit(r)
		return r
	}
	for _, tc := range []struct {
		name  string
		rfq   *RFQ
		view  []*Capacity
		wants []string
	}{
		{"empty view", rfq(func(*RFQ) {}), nil, []string{"no provider in this renter's market view"}},
		{"model nobody offers", rfq(func(r *RFQ) { r.Resources.Models = []string{"t4"} }), view,
			[]string{"no provider offers t4", "2 providers offer a100 (1), h100 (1)"}},
		{"runtime", rfq(func(r *RFQ) { r.Runtime = RuntimeDocker }), view, []string{"1 provider offers h100", "none runs docker jobs"}},
		{"region", rfq(func(r *RFQ) { r.Regions = []string{"us", "nl"} }), view, []string{"none in region us,nl (they are in de)"}},
		{"reliability", rfq(func(r *RFQ) { r.MinReliabilityPermille = 900 }), view, []string{"reliability 0.900", "best has 0.500"}},
		{"all busy", rfq(func(r *RFQ) { r.Resources.Models = []string{"a100"} }), view, []string{"1 provider offers a100, but all are busy"}},
		{"too few free", rfq(func(r *RFQ) { r.Resources.GPUs = 2 }), view, []string{"only 1 such GPUs are free and you asked for 2"}},
		{"price", rfq(func(r *RFQ) { r.MaxPriceMicro = 10_000 }), view,
			[]string{"the cheapest asks $2.4900 per GPU-hour for silver and your cap is $0.0100"}},
		{"could have bid", rfq(func(*RFQ) {}), view, []string{"1 provider could take it", "500ms window"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ExplainNoBids(tc.rfq, tc.view, rel)
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("ExplainNoBids = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}
