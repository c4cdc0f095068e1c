package auction

import (
	"math"
	"slices"
	"time"
)

// The bidder's price step.

// quotePrice prices a bid that passed the filter:
//
//	normal = max(floor, floor × calendar × scarcity)
//	price  = normal × gap, at least floor × gap
//
// The scarcity factor follows in.Market when set (capped at its price
// index) and the host's own utilization otherwise. The gap discount
// applies after the floor, so a leftover window can sell below it.
func quotePrice(in QuoteInput, pol BidPolicy, cal calendarView) (Quotation, error) {
	r, c := in.RFQ, in.Capacity
	floor := c.Floor.For(r.Tier)
	q := Quotation{FloorMicro: floor, CalendarFactor: float64(cal.factorPermille) / 1000, UtilFactor: 1, GapFactor: 1}
	q.UtilFactor = scarcityFactor(in, pol)
	jobSec := r.MaxDurationSec
	if jobSec == 0 {
		jobSec = r.ExpectedDurationSec
	}
	if cal.bounded && jobSec > 0 && cal.left <= time.Duration(pol.GapMaxSec)*time.Second && time.Duration(jobSec)*time.Second <= cal.left {
		q.GapFactor = 1 - min(max(pol.GapDiscount, 0), 1)
	}
	normal := float64(floor) * q.CalendarFactor
	if in.Market != nil && in.Market.IndexMicro > 0 {
		// The markup never passes the index; a floor above it still holds.
		normal = max(normal, min(normal*q.UtilFactor, float64(in.Market.IndexMicro)))
	} else {
		normal *= q.UtilFactor
	}
	normal = max(normal, float64(floor))
	price := math.Round(normal * q.GapFactor)
	priceMicro := uint64(min(max(price, 0), math.MaxUint64/2))
	if priceMicro > r.MaxPriceMicro {
		_, err := noBid(NoBidPrice, "price %d uUSD/GPU-h (floor %d × calendar %.3g × scarcity %.3g × gap %.3g) above max %d",
			priceMicro, floor, q.CalendarFactor, q.UtilFactor, q.GapFactor, r.MaxPriceMicro)
		return Quotation{}, err
	}
	q.Bid.PriceMicro = priceMicro
	return q, nil
}

// scarcityFactor is 1 + k·x²: x from the market's utilization above
// ScarcityFrom when in.Market is set, else the legacy share of this
// host's GPUs not offerable.
func scarcityFactor(in QuoteInput, pol BidPolicy) float64 {
	if m := in.Market; m != nil {
		u := m.Utilization
		if math.IsNaN(u) {
			return 1
		}
		from := min(max(pol.ScarcityFrom, 0), 1)
		if u <= from || from >= 1 {
			return 1
		}
		x := min((u-from)/(1-from), 1)
		return 1 + max(pol.ScarcityK, 0)*x*x
	}
	c := in.Capacity
	n := len(c.GPUs)
	if n == 0 {
		return 1
	}
	offerable := 0
	for _, g := range c.GPUs {
		if g.Free && !in.Held[g.UUID] {
			offerable++
		}
	}
	u := float64(n-offerable) / float64(n)
	return 1 + max(pol.UtilizationK, 0)*u*u
}

// openFor returns how long the calendar stays open from t, following
// windows that abut (Monday 22:00-24:00 then Tuesday 00:00-06:00 is one
// period). bounded is false for an empty calendar, or one open all week.
func openFor(cal []Window, t time.Time) (left time.Duration, bounded bool) {
	if len(cal) == 0 {
		return 0, false
	}
	t = t.UTC()
	at := t
	// A week has at most 7*24 windows; one more step proves it wraps.
	for range MaxWindows + 1 {
		day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
		minute := uint16(at.Sub(day) / time.Minute)
		i := slices.IndexFunc(cal, func(w Window) bool {
			return w.Day == at.Weekday() && minute >= w.StartMin && minute < w.EndMin
		})
		if i < 0 {
			return at.Sub(t), true
		}
		at = day.Add(time.Duration(cal[i].EndMin) * time.Minute)
		if at.Sub(t) >= 7*24*time.Hour {
			return 0, false
		}
	}
	return 0, false
}
