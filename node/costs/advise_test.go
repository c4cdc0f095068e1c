package costs

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestBreakEvenByHand(t *testing.T) {
	u := Usage{OfferedGPUHours: 100, LeasedGPUHours: 50, FixedUSD: 90, HostEnergyUSD: 10, LeasedEnergyUSD: 6, IdleEnergyUSD: 1}
	r := u.Rates(0.1)
	near(t, "fixed", r.FixedUSDHour, 1)
	near(t, "idle", r.IdleUSDHour, 0.02)
	near(t, "busy", r.BusyUSDHour, 0.12)
	near(t, "utilization", u.Utilization(), 0.5)
	near(t, "at 50%", r.BreakEven(0.5), 1.07/0.45)
	near(t, "at 80%", r.BreakEven(0.8), 1.1/0.72)
	if !math.IsInf(r.BreakEven(0), 1) {
		t.Error("break-even at 0% utilization is finite")
	}
	if r := (Usage{OfferedGPUHours: 10, IdleEnergyUSD: 1}).Rates(0); r.BusyMeasured || r.BusyUSDHour != r.IdleUSDHour {
		t.Errorf("nothing leased: %+v", r)
	}
}

// TestBreakEvenFromLedger: at the measured utilization the break-even
// floor is all of a GPU's costs over its leased hours.
func TestBreakEvenFromLedger(t *testing.T) {
	m := mustModel(t, Config{PriceKWh: 1, GPUCapitalUSD: 8760, DepreciationYears: 1})
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	l := NewLedger(m, day, day.Add(24*time.Hour), []GPU{{UUID: "a", Model: "h100-80gb"}})
	for h := range 24 {
		g := full("a", "", 100, 3_600_000)
		if h%2 == 0 {
			g = full("a", "L", 500, 3_600_000)
		}
		l.AddTelemetry(win(day.Add(time.Duration(h)*time.Hour), time.Hour, g))
	}
	var u Usage
	u.Add(l.Report().GPUs[0])
	r := u.Rates(0)
	near(t, "busy", r.BusyUSDHour, 0.5)
	near(t, "idle", r.IdleUSDHour, 0.1)
	near(t, "measured", r.BreakEven(u.Utilization()), (24+6+1.2)/12.0)
	near(t, "at 100%", r.BreakEven(1), 1.5)
}

func TestVerdict(t *testing.T) {
	ix := Index{Awards: 5, P10: 1, Median: 2, P90: 3}
	for _, tc := range []struct {
		name            string
		floor, beM, beT float64
		ix              Index
		want            string
	}{
		{"below target", 1, 3, 2, ix, "floor below break-even at the target"},
		{"below measured", 2.5, 3, 2, ix, "floor below break-even at the measured"},
		{"market too cheap", 4, 3.5, 3.2, ix, "does not pay here"},
		{"above p90", 4, 2, 1.5, ix, "above the market's p90"},
		{"below p10", 0.9, 0.5, 0.4, ix, "below the market's p10"},
		{"no index", 2, 1, 1, Index{}, "no cleared prices"},
		{"fine", 2, 1, 1, ix, "inside the market's range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Verdict(tc.floor, tc.beM, tc.beT, tc.ix); !strings.Contains(got, tc.want) {
				t.Errorf("Verdict = %q, want %q", got, tc.want)
			}
		})
	}
}
