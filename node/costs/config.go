// Package costs prices a provider's own signed telemetry: electricity (with
// time-of-use windows in the operator's time zone, a PUE for cooling and the
// host's idle draw), bandwidth, fees and straight-line depreciation of each
// GPU, against the vouchers renters paid. It is pure: callers hand in the
// telemetry windows, the payments, the range and the clock; nothing here
// reads a store or the wall clock.
//
// A Ledger sums one range into days (local calendar days of the tariff's
// time zone, so a DST day is 23 or 25 hours long) and GPUs. Energy comes
// from the windows' energy counter deltas; where a counter reset left part
// of a window unmeasured, that part is priced at the window's average
// power, so a driver reload neither loses nor invents energy.
package costs

import (
	"fmt"
	"time"
)

// Config is the [costs] section of config.toml. Zero values mean "no such
// cost", so an operator who fills in nothing sees gross income only.
type Config struct {
	// TimeZone is the IANA zone of the electricity tariff and of the
	// ledger's days ("Europe/Berlin"); empty: UTC.
	TimeZone string `toml:"time_zone"`
	// PriceKWh is the electricity price per kWh at the wall, in USD,
	// outside every window.
	PriceKWh float64 `toml:"price_kwh"`
	// Windows are time-of-use prices, each "DAYS HH:MM-HH:MM PRICE" in
	// local time, such as "mon-fri 17:00-21:00 0.45"; the first that
	// matches wins.
	Windows []string `toml:"windows"`
	// PUE is the facility's power usage effectiveness: wall energy over IT
	// energy, for cooling and conversion losses. 0 means 1.
	PUE float64 `toml:"pue"`
	// HostIdleW is the host's draw beyond its GPUs (CPUs, fans, disks,
	// board, power supply losses), in watts; PUE applies on top.
	HostIdleW float64 `toml:"host_idle_w"`
	// BandwidthUSDMonth is the internet line's cost per month (30 days).
	BandwidthUSDMonth float64 `toml:"bandwidth_usd_month"`
	// FeePct is the share of revenue lost to fees (payment rails,
	// exchange), in percent.
	FeePct float64 `toml:"fee_pct"`
	// GPUCapitalUSD is what one GPU (with its share of the host) cost;
	// DepreciationYears the straight-line period written off over.
	GPUCapitalUSD     float64 `toml:"gpu_capital_usd"`
	DepreciationYears float64 `toml:"depreciation_years"`
	// Models overrides the capital cost and period per GPU model slug
	// ("h100-80gb").
	Models []ModelCapital `toml:"models"`
}

// Priced reports whether the config prices anything (electricity,
// hardware, bandwidth or fees). Without it every cost is $0 because it is
// unknown, not because it is free: earnings and advice say so.
func (c Config) Priced() bool {
	return c.PriceKWh > 0 || len(c.Windows) > 0 || c.HostIdleW > 0 || c.BandwidthUSDMonth > 0 ||
		c.FeePct > 0 || c.GPUCapitalUSD > 0 || len(c.Models) > 0
}

// ModelCapital is the capital cost of one GPU model.
type ModelCapital struct {
	Model             string  `toml:"model"`
	CapitalUSD        float64 `toml:"capital_usd"`
	DepreciationYears float64 `toml:"depreciation_years"`
}

// Model is a validated Config, ready to price windows.
type Model struct {
	Loc         *time.Location
	Tariff      Tariff
	PUE         float64
	HostIdleW   float64
	BandwidthHr float64 // USD per hour
	FeeShare    float64 // 0..1
	capital     Capital
	models      map[string]Capital
}

// Capital is one GPU's capital cost and write-off period.
type Capital struct {
	USD    float64
	Period time.Duration
}

// PerHour is the straight-line depreciation per hour.
func (c Capital) PerHour() float64 {
	if c.Period <= 0 {
		return 0
	}
	return c.USD / c.Period.Hours()
}

const year = 365 * 24 * time.Hour

// KeyError is a bad [costs] value; Key is its full name ("costs.pue").
type KeyError struct{ Key, Msg string }

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// NewModel validates a Config; its errors are *KeyError.
func NewModel(c Config) (Model, error) {
	bad := func(key, format string, a ...any) (Model, error) {
		return Model{}, &KeyError{Key: "costs." + key, Msg: fmt.Sprintf(format, a...)}
	}
	loc := time.UTC
	if c.TimeZone != "" {
		l, err := time.LoadLocation(c.TimeZone)
		if err != nil {
			return bad("time_zone", "%q: %v", c.TimeZone, err)
		}
		loc = l
	}
	switch {
	case c.PriceKWh < 0 || c.PriceKWh > 10:
		return bad("price_kwh", "%v: must be 0..10 USD", c.PriceKWh)
	case c.PUE != 0 && (c.PUE < 1 || c.PUE > 3):
		return bad("pue", "%v: must be 1..3 (or 0 for 1)", c.PUE)
	case c.HostIdleW < 0 || c.HostIdleW > 10_000:
		return bad("host_idle_w", "%v: must be 0..10000 W", c.HostIdleW)
	case c.BandwidthUSDMonth < 0:
		return bad("bandwidth_usd_month", "must not be negative")
	case c.FeePct < 0 || c.FeePct >= 100:
		return bad("fee_pct", "%v: must be 0..100", c.FeePct)
	case c.GPUCapitalUSD < 0:
		return bad("gpu_capital_usd", "must not be negative")
	case c.DepreciationYears < 0 || c.DepreciationYears > 20:
		return bad("depreciation_years", "%v: must be 0..20", c.DepreciationYears)
	case c.GPUCapitalUSD > 0 && c.DepreciationYears == 0:
		return bad("depreciation_years", "gpu_capital_usd is set but no period to write it off over")
	}
	t := Tariff{DefaultKWh: c.PriceKWh}
	for _, s := range c.Windows {
		w, err := ParseWindow(s)
		if err != nil {
			return bad("windows", "%v", err)
		}
		t.Windows = append(t.Windows, w)
	}
	m := Model{
		Loc: loc, Tariff: t, PUE: c.PUE, HostIdleW: c.HostIdleW,
		BandwidthHr: c.BandwidthUSDMonth / (30 * 24), FeeShare: c.FeePct / 100,
		capital: Capital{USD: c.GPUCapitalUSD, Period: time.Duration(c.DepreciationYears * float64(year))},
		models:  map[string]Capital{},
	}
	if m.PUE == 0 {
		m.PUE = 1
	}
	for i, mc := range c.Models {
		switch {
		case mc.Model == "":
			return bad(fmt.Sprintf("models[%d].model", i), "is empty")
		case mc.CapitalUSD < 0 || mc.DepreciationYears <= 0 || mc.DepreciationYears > 20:
			return bad(fmt.Sprintf("models[%d]", i), "%s: need capital_usd >= 0 and depreciation_years in (0, 20]", mc.Model)
		}
		m.models[mc.Model] = Capital{USD: mc.CapitalUSD, Period: time.Duration(mc.DepreciationYears * float64(year))}
	}
	return m, nil
}

// CapitalOf is the capital cost of a GPU model, the default when the
// model has no override.
func (m Model) CapitalOf(model string) Capital {
	if c, ok := m.models[model]; ok {
		return c
	}
	return m.capital
}
