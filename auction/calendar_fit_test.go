package auction

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestDigestTakesNowAgreesWithQuote: a digest's calendar fields tell a
// reader what the host's own Quote decides, for any calendar, time, tier
// and job length, as long as the digest is of the current open period
// and the provider's notice is the RFQ's least (the digest does not
// carry the provider's). A host the digest says takes the job bids, and
// one it says cannot refuses with NoBidCalendar.
func TestDigestTakesNowAgreesWithQuote(t *testing.T) {
	_, id := testKey(t, 3)
	rapid.Check(t, func(t *rapid.T) {
		c := quoteCapacity()
		c.Peer = id.String()
		c.Policy.MaxDurationSec = 0
		for day := time.Sunday; day <= time.Saturday; day++ {
			at := uint16(0)
			for n := rapid.IntRange(0, 3).Draw(t, "windows"); n > 0 && at < 1440; n-- {
				start := at + uint16(rapid.IntRange(0, 600).Draw(t, "gap"))
				end := start + uint16(rapid.IntRange(1, 900).Draw(t, "len"))
				if start >= 1440 {
					break
				}
				c.Calendar = append(c.Calendar, Window{Day: day, StartMin: start, EndMin: min(end, 1440), FactorPermille: 1000})
				at = min(end, 1440)
			}
		}
		issued := fixedNow.Add(time.Duration(rapid.Int64Range(0, 7*24*3600).Draw(t, "at")) * time.Second)
		c.IssuedAtMs, c.ExpiresAtMs = issued.UnixMilli(), issued.Add(time.Hour).UnixMilli()
		// A reader may hold the digest a while; within its open period
		// it still answers as Quote does then.
		now := issued.Add(time.Duration(rapid.Int64Range(0, 600).Draw(t, "stale")) * time.Second)
		r := quoteRFQ()
		r.ExpiresAtMs = 0
		r.Tier = rapid.SampledFrom(Tiers).Draw(t, "tier")
		r.ExpectedDurationSec = uint64(rapid.Int64Range(0, 3*24*3600).Draw(t, "expected"))
		r.MaxDurationSec = r.ExpectedDurationSec
		r.MinNoticeSec = uint32(rapid.IntRange(0, 7200).Draw(t, "notice"))
		d, err := NewDigest(DigestInput{Capacity: c, Seq: 1, Now: issued})
		if err != nil {
			t.Fatal(err)
		}
		if d.Closed || d.OpenUntilMs != 0 && now.UnixMilli() >= d.OpenUntilMs {
			now = issued // the calendar may have changed since: stale, not wrong
		}
		pol := DefaultBidPolicy()
		pol.NoticeSec = r.MinNoticeSec
		_, qerr := Quote(QuoteInput{RFQ: r, RFQID: testRFQID, Capacity: c, Now: now, Policy: pol})
		var nb *NoBid
		refusedForCalendar := errors.As(qerr, &nb) && nb.Code == NoBidCalendar
		if qerr != nil && !refusedForCalendar {
			t.Fatalf("quote refused for another reason: %v", qerr)
		}
		takes := d.TakesNow(r, now)
		if takes == refusedForCalendar || takes != c.CalendarAdmits(r, now, pol.NoticeSec) {
			t.Fatalf("digest (open until %d, closed %v) takes the job at %s: %v; Quote: %v; CalendarAdmits %v",
				d.OpenUntilMs, d.Closed, now, takes, qerr, c.CalendarAdmits(r, now, pol.NoticeSec))
		}
		if _, open := c.OpenUntil(now); d.ClosedAt(now) == open {
			t.Fatalf("digest closed at %s: %v; calendar open: %v", now, d.ClosedAt(now), open)
		}
	})
}

// A digest held past the end of its open period reads as closed, and a
// bronze job needs only the RFQ's least notice before the close.
func TestDigestClosedAt(t *testing.T) {
	end := fixedNow.Add(2 * time.Hour)
	d := &Digest{IssuedAtMs: fixedNow.UnixMilli(), OpenUntilMs: end.UnixMilli()}
	r := &RFQ{Tier: TierSilver, ExpectedDurationSec: 3600}
	for _, tc := range []struct {
		name         string
		at           time.Time
		closed, take bool
	}{
		{"an hour before the close", end.Add(-time.Hour), false, true},
		{"half an hour before", end.Add(-30 * time.Minute), false, false},
		{"at the close", end, true, false},
		{"after it", end.Add(time.Minute), true, false},
	} {
		if d.ClosedAt(tc.at) != tc.closed || d.TakesNow(r, tc.at) != tc.take {
			t.Errorf("%s: closed %v takes %v, want %v %v", tc.name, d.ClosedAt(tc.at), d.TakesNow(r, tc.at), tc.closed, tc.take)
		}
	}
	bronze := &RFQ{Tier: TierBronze, ExpectedDurationSec: 3600, MinNoticeSec: 600}
	if !d.TakesNow(bronze, end.Add(-11*time.Minute)) || d.TakesNow(bronze, end.Add(-9*time.Minute)) {
		t.Error("bronze: the RFQ's notice should be all a digest reader asks for")
	}
	if closed := (&Digest{Closed: true}); !closed.ClosedAt(fixedNow) || closed.TakesNow(bronze, time.Time{}) {
		t.Error("a closed digest takes work")
	}
}
