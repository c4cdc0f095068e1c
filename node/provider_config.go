package node

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
)

// validateMarket checks the [gpu], [provider] and [market] sections.
func (c *Config) validateMarket() error {
	bad := func(key, format string, a ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	switch c.GPU.Backend {
	case gpu.BackendAuto, gpu.BackendNVML, gpu.BackendSim, gpu.BackendNone:
	default:
		return bad("gpu.backend", "%q: want auto, nvml, sim or none", c.GPU.Backend)
	}
	for _, p := range c.GPU.Sim.Profiles {
		if _, ok := gpu.LookupProfile(p); !ok {
			return bad("gpu.sim.profiles", "unknown profile %q; known: %v", p, gpu.ProfileKeys())
		}
	}
	if c.GPU.Backend == gpu.BackendSim && len(c.GPU.Sim.Profiles) == 0 {
		return bad("gpu.sim.profiles", "backend sim needs at least one profile; known: %v", gpu.ProfileKeys())
	}
	p := &c.Provider
	if c.Role == RoleProvider {
		if !auction.IsCountryCode(p.Region) {
			hint := ""
			if s := auction.SuggestCountry(p.Region); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			return bad("provider.region", "%q is not an ISO 3166-1 alpha-2 country code in lower case%s", p.Region, hint)
		}
	}
	for _, rt := range p.Runtimes {
		if !slices.Contains(auction.KnownRuntimes, rt) {
			return bad("provider.runtimes", "unknown runtime %q; want one of %v", rt, auction.KnownRuntimes)
		}
	}
	if len(p.Tiers) == 0 {
		return bad("provider.tiers", "accept at least one tier")
	}
	for _, t := range p.Tiers {
		tier, err := auction.ParseTier(t)
		if err != nil {
			return bad("provider.tiers", "%v", err)
		}
		if usd := p.FloorUSD.For(tier); !(usd > 0) || usd > 1000 {
			return bad("provider.floor_usd."+t, "%v: a tier you accept needs a floor above 0 and at most 1000 USD per GPU-hour", usd)
		}
	}
	if _, err := ParseCalendar(p.Calendar); err != nil {
		return bad("provider.calendar", "%v", err)
	}
	if p.MaxDuration < 0 {
		return bad("provider.max_duration", "must not be negative")
	}
	if p.PreemptNotice < time.Second || p.PreemptNotice > time.Hour {
		return bad("provider.preempt_notice", "%s: must be within 1s..1h", p.PreemptNotice)
	}
	if p.RecordTTL < 10*time.Second || p.Republish <= 0 || p.Republish >= p.RecordTTL {
		return bad("provider.republish", "need 0 < republish (%s) < record_ttl (%s), record_ttl at least 10s", p.Republish, p.RecordTTL)
	}
	for key, v := range map[string]int{"provider.cpu_cores": p.CPUCores, "provider.ram_mib": p.RAMMiB, "provider.disk_gib": p.DiskGiB, "provider.bandwidth_mbps": p.BandwidthMbps} {
		if v < 0 {
			return bad(key, "must not be negative (0 means detect)")
		}
	}
	m := c.Market
	if !(m.ReliabilityPrior >= 0 && m.ReliabilityPrior <= 1) {
		return bad("market.reliability_prior", "%v: must be within 0..1", m.ReliabilityPrior)
	}
	if m.Refresh < 0 || m.SearchTimeout <= 0 {
		return bad("market.search_timeout", "refresh must be >= 0 and search_timeout > 0")
	}
	return nil
}

// For returns the floor for a tier.
func (f FloorUSD) For(t auction.Tier) float64 {
	switch t {
	case auction.TierGold:
		return f.Gold
	case auction.TierSilver:
		return f.Silver
	default:
		return f.Bronze
	}
}

// USDToMicro converts USD to integer micro-USD, rounding to the nearest.
func USDToMicro(usd float64) uint64 { return uint64(math.Round(usd * 1e6)) }

var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// ParseCalendar parses availability windows written as
// "DAYS HH:MM-HH:MM [xFACTOR]": DAYS is "*", a day ("mon"), a range
// ("mon-fri") or a list ("sat,sun"); the end time may be 24:00; FACTOR
// scales the floor price (default 1.0).
func ParseCalendar(lines []string) ([]auction.Window, error) {
	var out []auction.Window
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("%q: want \"DAYS HH:MM-HH:MM [xFACTOR]\"", line)
		}
		days, err := parseDays(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		startS, endS, ok := strings.Cut(fields[1], "-")
		if !ok {
			return nil, fmt.Errorf("%q: time range must be HH:MM-HH:MM", line)
		}
		start, err := parseClock(startS)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		end, err := parseClock(endS)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		if end <= start {
			return nil, fmt.Errorf("%q: end must be after start; split a window that crosses midnight in two", line)
		}
		factor := uint32(1000)
		if len(fields) == 3 {
			fs, ok := strings.CutPrefix(fields[2], "x")
			f, err := strconv.ParseFloat(fs, 64)
			if !ok || err != nil || f <= 0 || f > 100 {
				return nil, fmt.Errorf("%q: price factor must look like x1.5 (0 < factor <= 100)", line)
			}
			factor = uint32(math.Round(f * 1000))
		}
		for _, d := range days {
			w := auction.Window{Day: d, StartMin: start, EndMin: end, FactorPermille: factor}
			for _, o := range out {
				if o.Day == w.Day && w.StartMin < o.EndMin && o.StartMin < w.EndMin {
					return nil, fmt.Errorf("%q overlaps another window on %s", line, dayNames[d])
				}
			}
			out = append(out, w)
		}
	}
	return out, nil
}

func parseDays(s string) ([]time.Weekday, error) {
	if s == "*" {
		return []time.Weekday{0, 1, 2, 3, 4, 5, 6}, nil
	}
	day := func(n string) (time.Weekday, error) {
		i := slices.Index(dayNames, n)
		if i < 0 {
			return 0, fmt.Errorf("unknown day %q (want sun, mon, ..., sat)", n)
		}
		return time.Weekday(i), nil
	}
	var out []time.Weekday
	for _, part := range strings.Split(s, ",") {
		if a, b, ok := strings.Cut(part, "-"); ok {
			from, err := day(a)
			if err != nil {
				return nil, err
			}
			to, err := day(b)
			if err != nil {
				return nil, err
			}
			for d := from; ; d = (d + 1) % 7 {
				out = append(out, d)
				if d == to {
					break
				}
			}
			continue
		}
		d, err := day(part)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func parseClock(s string) (uint16, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || mm < 0 || mm > 59 || hh > 24 || (hh == 24 && mm != 0) {
		return 0, fmt.Errorf("bad time %q (want HH:MM, up to 24:00)", s)
	}
	return uint16(hh*60 + mm), nil
}
