package costs

import (
	"math"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.10g, want %.10g", what, got, want)
	}
}

func mustModel(t *testing.T, c Config) Model {
	t.Helper()
	m, err := NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// full is a GPU's window measured end to end at a constant power.
func full(uuid, lease string, watts float64, ms int64) attest.GPUTelemetry {
	return attest.GPUTelemetry{
		UUID: uuid, Lease: lease, PowerAvgMW: uint64(watts * 1000),
		EnergyMJ: uint64(watts * float64(ms)), EnergyMs: uint64(ms),
	}
}

func win(start time.Time, d time.Duration, gpus ...attest.GPUTelemetry) *attest.Telemetry {
	return &attest.Telemetry{StartMs: start.UnixMilli(), EndMs: start.Add(d).UnixMilli(), GPUs: gpus}
}

// TestLedgerOneDay prices a Monday by hand: every cost kind, a window
// across a tariff edge, a paid lease.
func TestLedgerOneDay(t *testing.T) {
	m := mustModel(t, Config{
		PriceKWh: 0.20, Windows: []string{"mon-fri 17:00-21:00 0.50"}, PUE: 1.5, HostIdleW: 100,
		BandwidthUSDMonth: 72, FeePct: 10, GPUCapitalUSD: 8760, DepreciationYears: 1,
	})
	mon := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	l := NewLedger(m, mon, mon.Add(24*time.Hour), []GPU{{UUID: "a"}, {UUID: "b"}})
	// 16:30-17:30: half at 0.20, half at 0.50, so 0.35 on average.
	l.AddTelemetry(win(mon.Add(16*time.Hour+30*time.Minute), time.Hour,
		full("a", "L1", 400, 3_600_000), full("b", "", 50, 3_600_000)))
	l.AddPayment(Payment{At: mon.Add(16*time.Hour + 30*time.Minute), GPUs: []string{"a"}, USD: 10})
	l.AddPayment(Payment{At: mon.Add(-time.Minute), GPUs: []string{"a"}, USD: 99}) // before the range
	r := l.Report()
	if len(r.Days) != 1 || r.Days[0].Day != "2026-11-30" || r.Days[0].Leases != 1 {
		t.Fatalf("days = %+v", r.Days)
	}
	d := r.Days[0]
	// kWh: a 0.4×1.5, b 0.05×1.5, host 0.1×1.5.
	near(t, "energy kWh", d.EnergyKWh, 0.825)
	near(t, "energy USD", d.EnergyUSD, 0.825*0.35)
	near(t, "depreciation", d.DepreciationUSD, 48) // 2 GPUs × 1 USD/h × 24 h
	near(t, "bandwidth", d.BandwidthUSD, 2.4)      // 72 / 720 h × 24 h
	near(t, "fees", d.FeesUSD, 1)
	near(t, "net", d.NetUSD, 10-1-0.825*0.35-48-2.4)
	near(t, "utilization", d.Utilization, 0.5)
	if len(r.GPUs) != 2 || r.GPUs[0].UUID != "a" {
		t.Fatalf("gpus = %+v", r.GPUs)
	}
	a := r.GPUs[0]
	near(t, "a kWh", a.EnergyKWh, 0.6+0.075) // its own plus half the host
	near(t, "a net", a.NetUSD, 10-1-0.675*0.35-24-1.2)
	near(t, "a utilization", a.Utilization, 1)
	near(t, "total net", r.Total.NetUSD, d.NetUSD)
}

// TestLedgerCounterReset: a day of three 8-hour windows at 300 W, the
// middle one with a driver reload halfway. The unmeasured half is priced
// at the sampled average power: 7.2 kWh, not the counter's 6.0.
func TestLedgerCounterReset(t *testing.T) {
	m := mustModel(t, Config{PriceKWh: 0.30})
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := NewLedger(m, day, day.Add(24*time.Hour), []GPU{{UUID: "a"}})
	const eight = 8 * 3600 * 1000
	l.AddTelemetry(win(day, 8*time.Hour, full("a", "", 300, eight)))
	reset := full("a", "", 300, eight/2)
	reset.EnergyReset = true
	l.AddTelemetry(win(day.Add(8*time.Hour), 8*time.Hour, reset))
	l.AddTelemetry(win(day.Add(16*time.Hour), 8*time.Hour, full("a", "", 300, eight)))
	d := l.Report().Days[0]
	near(t, "kWh", d.EnergyKWh, 7.2)
	near(t, "USD", d.EnergyUSD, 2.16)
	near(t, "offered", d.OfferedGPUHours, 24)
}

func TestWindowEnergy(t *testing.T) {
	// 59 s measured at 300 W in a 60 s window (first to last sample at 1 Hz):
	// the missing second at the sampled 300 W makes 18 kJ.
	g := attest.GPUTelemetry{EnergyMJ: 59_000 * 300, EnergyMs: 59_000, PowerAvgMW: 300_000}
	near(t, "edge", WindowEnergyMJ(g, 60_000), 18_000_000)
	// A reset: 30 s measured at 300 W, samples averaged 500 W.
	g = attest.GPUTelemetry{EnergyMJ: 9_000_000, EnergyMs: 30_000, PowerAvgMW: 500_000, EnergyReset: true}
	near(t, "reset", WindowEnergyMJ(g, 60_000), 24_000_000)
}

// TestLedgerDST: a whole-day window of an idle GPU on a 1 kW host in
// Berlin, night rate 00:00-06:00 local. The autumn change makes 00:00-06:00
// seven hours and the day 25; the spring change five and 23.
func TestLedgerDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	m := mustModel(t, Config{
		TimeZone: "Europe/Berlin", PriceKWh: 0.30, Windows: []string{"daily 00:00-06:00 0.10"},
		HostIdleW: 1000, BandwidthUSDMonth: 72, GPUCapitalUSD: 8760, DepreciationYears: 1,
	})
	for _, tc := range []struct {
		name         string
		day          time.Time
		hours, night float64
	}{
		{"autumn", time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), 25, 7},
		{"spring", time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), 23, 5},
		{"plain", time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), 24, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := time.Date(tc.day.Year(), tc.day.Month(), tc.day.Day()+1, 0, 0, 0, 0, berlin)
			l := NewLedger(m, tc.day, end, []GPU{{UUID: "a"}})
			ms := end.Sub(tc.day).Milliseconds()
			l.AddTelemetry(win(tc.day, end.Sub(tc.day), full("a", "", 0, ms)))
			r := l.Report()
			if len(r.Days) != 1 || r.Days[0].Day != tc.day.Format(time.DateOnly) {
				t.Fatalf("days = %+v", r.Days)
			}
			d := r.Days[0]
			near(t, "kWh", d.EnergyKWh, tc.hours)
			near(t, "USD", d.EnergyUSD, tc.night*0.10+(tc.hours-tc.night)*0.30)
			near(t, "depreciation", d.DepreciationUSD, tc.hours)
			near(t, "bandwidth", d.BandwidthUSD, tc.hours*0.1)
			near(t, "offered", d.OfferedGPUHours, tc.hours)
		})
	}
}

// TestLedgerMidnight: a window across local midnight is split by time
// between the two days; the lease's pay stays on its start day.
func TestLedgerMidnight(t *testing.T) {
	m := mustModel(t, Config{PriceKWh: 1})
	d0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := NewLedger(m, d0, d0.Add(48*time.Hour), nil)
	l.AddTelemetry(win(d0.Add(23*time.Hour), 2*time.Hour, full("a", "L", 1000, 2*3600*1000)))
	l.AddPayment(Payment{At: d0.Add(23 * time.Hour), GPUs: []string{"a"}, USD: 5})
	r := l.Report()
	if len(r.Days) != 2 {
		t.Fatalf("days = %+v", r.Days)
	}
	near(t, "day 1 kWh", r.Days[0].EnergyKWh, 1)
	near(t, "day 2 kWh", r.Days[1].EnergyKWh, 1)
	near(t, "day 1 net", r.Days[0].NetUSD, 4)
	near(t, "day 2 net", r.Days[1].NetUSD, -1)
	near(t, "day 2 leased", r.Days[1].LeasedGPUHours, 1)
}

func TestNewModelRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
	}{
		{"zone", Config{TimeZone: "Mars/Olympus"}},
		{"pue", Config{PUE: 0.5}},
		{"fee", Config{FeePct: 100}},
		{"capital without period", Config{GPUCapitalUSD: 100}},
		{"window words", Config{Windows: []string{"mon-fri 17:00-21:00"}}},
		{"window night", Config{Windows: []string{"daily 22:00-06:00 0.1"}}},
		{"window day", Config{Windows: []string{"funday 01:00-02:00 0.1"}}},
		{"window price", Config{Windows: []string{"daily 01:00-02:00 -1"}}},
		{"model period", Config{Models: []ModelCapital{{Model: "h100-80gb", CapitalUSD: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewModel(tc.c); err == nil {
				t.Fatalf("NewModel(%+v) accepted", tc.c)
			}
		})
	}
	m := mustModel(t, Config{GPUCapitalUSD: 100, DepreciationYears: 1,
		Models: []ModelCapital{{Model: "h100-80gb", CapitalUSD: 30000, DepreciationYears: 4}}})
	if c := m.CapitalOf("h100-80gb"); c.USD != 30000 || c.Period != 4*year {
		t.Fatalf("override = %+v", c)
	}
	if c := m.CapitalOf("a100-40gb"); c.USD != 100 {
		t.Fatalf("default = %+v", c)
	}
}

func TestParseWindowDays(t *testing.T) {
	w, err := ParseWindow("fri-mon 00:00-24:00 0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := [7]bool{true, true, false, false, false, true, true} // sun mon .. fri sat
	if w.Days != want || w.EndSec != 86400 {
		t.Fatalf("window = %+v", w)
	}
}

// BenchmarkLedgerWeek prices a week of one-minute windows of an 8-GPU host.
func BenchmarkLedgerWeek(b *testing.B) {
	m, err := NewModel(Config{TimeZone: "Europe/Berlin", PriceKWh: 0.3, Windows: []string{"mon-fri 17:00-21:00 0.5", "daily 00:00-06:00 0.1"},
		PUE: 1.3, HostIdleW: 250, BandwidthUSDMonth: 50, FeePct: 2, GPUCapitalUSD: 25000, DepreciationYears: 4})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 10, 22, 0, 0, 0, 0, time.UTC)
	var inv []GPU
	var gpus []attest.GPUTelemetry
	for i := range 8 {
		u := string(rune('a' + i))
		inv = append(inv, GPU{UUID: u, Model: "h100-80gb"})
		gpus = append(gpus, full(u, "L", 500, 59_000))
	}
	const windows = 7 * 24 * 60
	tel := make([]*attest.Telemetry, windows)
	for i := range tel {
		tel[i] = win(start.Add(time.Duration(i)*time.Minute), time.Minute, gpus...)
	}
	b.ReportAllocs()
	for b.Loop() {
		l := NewLedger(m, start, start.Add(7*24*time.Hour), inv)
		for _, t := range tel {
			l.AddTelemetry(t)
		}
		if r := l.Report(); len(r.Days) != 8 { // seven days of UTC span 8 local days
			b.Fatalf("days = %d", len(r.Days))
		}
	}
}
