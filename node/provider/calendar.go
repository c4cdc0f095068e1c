package provider

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// For returns the floor for a tier (0 for an unknown tier), by the rule
// of auction.FloorPrice.For.
func (f FloorUSD) For(t auction.Tier) float64 {
	return auction.TierValue(t, f.Gold, f.Silver, f.Bronze)
}

// USDToMicro converts USD to integer micro-USD, rounding to the nearest.
func USDToMicro(usd float64) uint64 { return uint64(math.Round(usd * 1e6)) }

// DayNames are the calendar's day names, Sunday first (time.Weekday order).
var DayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

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
					return nil, fmt.Errorf("%q overlaps another window on %s", line, DayNames[d])
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
		i := slices.Index(DayNames, n)
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
