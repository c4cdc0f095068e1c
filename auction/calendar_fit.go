package auction

import "time"

// Whether a host's calendar lets it take a job now has one rule, whoever
// asks: the provider's Quote (on its record), the bounded-bidding rule
// (on the host's digest, so that a host that will refuse does not fill
// the cheapest prefix) and the simulator's baselines. Only the input
// differs: Quote knows its own notice, a digest reader only the least
// notice the RFQ accepts.

// MaxOpenPeriod bounds a digest's OpenUntilMs: openFor follows a calendar
// at most a week ahead, and one open that long counts as always open.
const MaxOpenPeriod = 7 * 24 * time.Hour

// calendarNeed is how long the calendar must stay open for a host to take
// r now: gold and silver jobs must be expected to finish inside the open
// period; a bronze job can be preempted at the close, as long as the
// notice (noticeSec) still fits.
func calendarNeed(r *RFQ, noticeSec uint32) time.Duration {
	if r.Tier == TierBronze {
		return time.Duration(noticeSec) * time.Second
	}
	return time.Duration(r.ExpectedDurationSec) * time.Second
}

// OpenUntil reports whether c's calendar is open at t and, when it is,
// when the open period holding t ends (abutting windows are one period).
// until is the zero time when the period has no end within MaxOpenPeriod
// (no calendar, or one open all week) or the calendar is closed.
func (c *Capacity) OpenUntil(t time.Time) (until time.Time, open bool) {
	if _, open = c.WindowAt(t); !open {
		return time.Time{}, false
	}
	if left, bounded := openFor(c.Calendar, t); bounded {
		return t.Add(left), true
	}
	return time.Time{}, true
}

// CalendarAdmits reports whether c's calendar lets it take r at now, as
// Quote judges it with the provider's notice noticeSec: open, and open
// long enough (calendarNeed).
func (c *Capacity) CalendarAdmits(r *RFQ, now time.Time, noticeSec uint32) bool {
	until, open := c.OpenUntil(now)
	return open && (until.IsZero() || calendarNeed(r, noticeSec) <= until.Sub(now))
}

// ClosedAt reports whether d's host is outside its calendar at now: the
// digest was issued outside it, or the open period it named has ended.
// A closed host's GPUs are neither free nor busy (the market signal
// leaves them out).
func (d *Digest) ClosedAt(now time.Time) bool {
	return d.Closed || d.OpenUntilMs != 0 && now.UnixMilli() >= d.OpenUntilMs
}

// TakesNow reports whether d's calendar lets its host take r at now, as
// the host's Quote would judge it: open, and for gold and silver open
// until the job is expected to end. A digest does not carry the
// provider's notice, so a bronze job needs the RFQ's least notice
// (min_notice_s): a host within its own, longer notice of the close may
// still refuse. A zero now checks only that the digest was issued open.
// Digests without the calendar fields (from before them) always take it.
func (d *Digest) TakesNow(r *RFQ, now time.Time) bool {
	switch {
	case d.Closed:
		return false
	case d.OpenUntilMs == 0 || now.IsZero():
		return true
	}
	left := time.UnixMilli(d.OpenUntilMs).Sub(now)
	return left > 0 && calendarNeed(r, r.MinNoticeSec) <= left
}

// Load counts d's GPUs of family (GPUFamily) for the market signal at now:
// busy ones (neither free nor held) and all. A host outside its calendar
// counts for nothing: its GPUs are not for rent, so they are neither
// busy nor idle, and idle-time hosts that close daily do not read as a
// scarcity of GPUs.
func (d *Digest) Load(family string, now time.Time) (busy, total int) {
	if d.ClosedAt(now) {
		return 0, 0
	}
	for _, m := range d.Models {
		if GPUFamily(m.Model) != family {
			continue
		}
		total += int(m.Total)
		busy += int(m.Total - m.Free - m.Held)
	}
	return busy, total
}
