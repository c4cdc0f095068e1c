package costs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is one time-of-use price: on the given weekdays, from Start to
// End (local wall-clock seconds of the day, End up to 24:00), electricity
// costs PriceKWh.
type Window struct {
	Days     [7]bool // indexed by time.Weekday
	StartSec int
	EndSec   int
	PriceKWh float64
}

// Tariff prices electricity by local wall-clock time.
type Tariff struct {
	DefaultKWh float64
	Windows    []Window
}

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseWindow reads "DAYS HH:MM-HH:MM PRICE": DAYS is "daily", a list
// ("sat,sun") or a range ("mon-fri"); a night window across midnight is
// written as two windows.
func ParseWindow(s string) (Window, error) {
	var w Window
	f := strings.Fields(s)
	if len(f) != 3 {
		return w, fmt.Errorf("window %q: want \"DAYS HH:MM-HH:MM PRICE\"", s)
	}
	if err := parseDays(f[0], &w.Days); err != nil {
		return w, fmt.Errorf("window %q: %w", s, err)
	}
	from, to, ok := strings.Cut(f[1], "-")
	var err1, err2 error
	w.StartSec, err1 = parseClock(from)
	w.EndSec, err2 = parseClock(to)
	if !ok || err1 != nil || err2 != nil || w.StartSec >= w.EndSec {
		return w, fmt.Errorf("window %q: want HH:MM-HH:MM with start before end (split a night window at 24:00)", s)
	}
	p, err := strconv.ParseFloat(f[2], 64)
	if err != nil || p < 0 || p > 10 {
		return w, fmt.Errorf("window %q: price %q must be 0..10 USD per kWh", s, f[2])
	}
	w.PriceKWh = p
	return w, nil
}

func parseDays(s string, out *[7]bool) error {
	if s == "daily" || s == "*" {
		*out = [7]bool{true, true, true, true, true, true, true}
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		da, ok1 := dayNames[a]
		db, ok2 := da, true
		if isRange {
			db, ok2 = dayNames[b]
		}
		if !ok1 || !ok2 {
			return fmt.Errorf("days %q: want daily, mon..sun, a list or a range", s)
		}
		for d := da; ; d = (d + 1) % 7 {
			out[d] = true
			if d == db {
				break
			}
		}
	}
	return nil
}

func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh*60+mm > 24*60 {
		return 0, fmt.Errorf("clock %q: want HH:MM, 00:00..24:00", s)
	}
	return (hh*60 + mm) * 60, nil
}

// price is the price in force at wall-clock second sec of a day with
// weekday wd, and the wall-clock second it next may change (a window edge,
// or 24:00).
func (t Tariff) price(wd time.Weekday, sec int) (float64, int) {
	price, found, next := t.DefaultKWh, false, 24*3600
	for _, w := range t.Windows {
		if !w.Days[wd] {
			continue
		}
		if !found && w.StartSec <= sec && sec < w.EndSec {
			price, found = w.PriceKWh, true
		}
		if w.StartSec > sec && w.StartSec < next {
			next = w.StartSec
		}
		if w.EndSec > sec && w.EndSec < next {
			next = w.EndSec
		}
	}
	return price, next
}

// segment is a stretch of time inside one local day and one price.
type segment struct {
	start, end time.Time
	day        string // local YYYY-MM-DD
	priceKWh   float64
}

// split cuts [start, end) at local midnights and price changes.
func (m *Model) split(start, end time.Time, yield func(segment)) {
	for t := start; t.Before(end); {
		local := t.In(m.Loc)
		y, mo, d := local.Date()
		midnight := time.Date(y, mo, d+1, 0, 0, 0, 0, m.Loc)
		sec := local.Hour()*3600 + local.Minute()*60 + local.Second()
		price, nextSec := m.Tariff.price(local.Weekday(), sec)
		segEnd := midnight
		if nextSec < 24*3600 {
			// A wall time inside a DST gap normalizes forward; one not after
			// t (a repeated hour) cannot end the segment, midnight does.
			if b := time.Date(y, mo, d, nextSec/3600, nextSec%3600/60, nextSec%60, 0, m.Loc); b.After(t) && b.Before(segEnd) {
				segEnd = b
			}
		}
		if end.Before(segEnd) {
			segEnd = end
		}
		yield(segment{start: t, end: segEnd, day: local.Format(time.DateOnly), priceKWh: price})
		t = segEnd
	}
}
