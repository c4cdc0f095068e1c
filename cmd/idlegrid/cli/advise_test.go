package cli

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
)

// TestAdviseOnNumbers: two H100s that together offered 100 GPU-hours,
// half of them leased, cost 90 USD by the clock, 10 of host energy, 6 of
// their own energy leased and 1 idle, with 10% fees: break-even is
// (1 + 0.5·0.02 + 0.5·0.12) / (0.5·0.9) per GPU-hour at the measured 50%
// and (1 + 0.2·0.02 + 0.8·0.12) / (0.8·0.9) at a target of 80%.
func TestAdviseOnNumbers(t *testing.T) {
	gpu := api.EarningsGPU{
		Model: "h100-80gb", OfferedGPUHours: 50, LeasedGPUHours: 25, HostEnergyUSD: 5, LeasedEnergyUSD: 3,
		EarningsCosts: api.EarningsCosts{DepreciationUSD: 40, BandwidthUSD: 5, EnergyUSD: 8.5},
	}
	a, b := gpu, gpu
	a.UUID, b.UUID = "GPU-a", "GPU-b"
	e := api.Earnings{FeePct: 10, CostsSet: true, GPUs: []api.EarningsGPU{a, b, {UUID: "GPU-gone", OfferedGPUHours: 3}}}
	offer := &api.Offer{Tiers: []string{"gold", "silver", "bronze"}, FloorUSD: api.TierPrices{Gold: 3, Silver: 2, Bronze: 1.2}}
	prices := api.Prices{Stats: []api.PriceStat{
		{Model: "h100-80gb", Tier: "gold", Awards: 3, P10USD: 2.5, MedianUSD: 3, P90USD: 4},
		{Model: "h100-80gb", Tier: "bronze", Awards: 9, P10USD: 1, MedianUSD: 1.3, P90USD: 1.5},
		{Model: "a100-40gb", Tier: "gold", Awards: 1, P10USD: 1, MedianUSD: 1, P90USD: 1},
	}}
	rows := buildAdvice(e, offer, prices, 0.8)
	if len(rows) != 3 {
		t.Fatalf("rows = %+v", rows)
	}
	want := []struct {
		tier, advice string
		p90          float64
	}{
		{"gold", "inside the market's range", 4},
		{"silver", "below break-even at the measured utilization", 0},
		{"bronze", "below break-even at the target utilization", 1.5},
	}
	for i, w := range want {
		r := rows[i]
		if r.Model != "h100-80gb" || r.Tier != w.tier || r.GPUs != 2 || r.P90USD != w.p90 || !strings.Contains(r.Advice, w.advice) {
			t.Errorf("row %d = %+v, want tier %s advice %q", i, r, w.tier, w.advice)
		}
		if math.Abs(r.BreakEvenMeasured-1.07/0.45) > 1e-9 || math.Abs(r.BreakEvenTarget-1.1/0.72) > 1e-9 || r.Utilization != 0.5 {
			t.Errorf("row %d break-even %v / %v at %v", i, r.BreakEvenMeasured, r.BreakEvenTarget, r.Utilization)
		}
	}
	var out bytes.Buffer
	printAdvice(&out, rows, 0.8)
	if !strings.Contains(out.String(), "$2.3778") || !strings.Contains(out.String(), "AT 80%") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestAdviseNothingLeased: no leased hours, so no measured break-even and
// a marked lower bound at the target.
func TestAdviseNothingLeased(t *testing.T) {
	e := api.Earnings{CostsSet: true, GPUs: []api.EarningsGPU{{UUID: "GPU-a", Model: "rtx-4090-24gb", OfferedGPUHours: 10,
		EarningsCosts: api.EarningsCosts{DepreciationUSD: 10, EnergyUSD: 1}}}}
	rows := buildAdvice(e, nil, api.Prices{}, 0.5)
	if len(rows) != 3 || rows[0].BreakEvenMeasured != -1 || rows[0].BusyMeasured {
		t.Fatalf("rows = %+v", rows)
	}
	// (1 + 0.5·0.1 + 0.5·0.1) / 0.5
	if math.Abs(rows[0].BreakEvenTarget-2.2) > 1e-9 || !strings.Contains(rows[0].Advice, "no cleared prices") {
		t.Errorf("row = %+v", rows[0])
	}
	var out bytes.Buffer
	printAdvice(&out, rows, 0.5)
	if !strings.Contains(out.String(), "-*") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestAdviseWithoutCosts: with [costs] empty, the break-even floors and
// the index of a model without awards are unknown, never $0, and no
// advice claims the floor covers costs.
func TestAdviseWithoutCosts(t *testing.T) {
	e := api.Earnings{GPUs: []api.EarningsGPU{{UUID: "GPU-a", Model: "h100-80gb", OfferedGPUHours: 10, LeasedGPUHours: 5}}}
	offer := &api.Offer{Tiers: []string{"silver"}, FloorUSD: api.TierPrices{Silver: 2}}
	prices := api.Prices{Stats: []api.PriceStat{{Model: "h100-80gb", Tier: "silver", Awards: 4, P10USD: 1.5, MedianUSD: 2.2, P90USD: 3}}}
	for _, tc := range []struct {
		prices api.Prices
		advice string
	}{
		{prices, "floor inside the market's range; set [costs]"},
		{api.Prices{}, "no cleared prices for this model and tier yet; set [costs]"},
	} {
		rows := buildAdvice(e, offer, tc.prices, 0.6)
		if len(rows) != 1 || !strings.HasPrefix(rows[0].Advice, tc.advice) || rows[0].CostsSet {
			t.Fatalf("rows = %+v, want advice %q", rows, tc.advice)
		}
		var out bytes.Buffer
		printAdvice(&out, rows, 0.6)
		txt := out.String()
		if !strings.Contains(txt, "costs: not set") || strings.Contains(txt, "$0.0000") || strings.Contains(txt, "covers costs") {
			t.Errorf("table:\n%s", txt)
		}
	}
}
