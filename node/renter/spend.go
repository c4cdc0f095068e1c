package renter

import (
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Spend is what this renter paid providers since a time, per UTC day.
type Spend struct {
	Since    time.Time
	TotalUSD float64
	Days     []SpendDay // by day, oldest first
}

// SpendDay is one UTC day of a renter's spending.
type SpendDay struct {
	Day      string // YYYY-MM-DD
	Leases   int
	SpentUSD float64
	GPUHours float64
}

// Spend sums this renter's signed vouchers per day since since (a lease's
// pay counts on the day it started).
func (r *Renter) Spend(since time.Time) (Spend, error) {
	out := Spend{Since: since.UTC()}
	days := map[string]*SpendDay{}
	leases, err := r.db.Leases()
	if err != nil {
		return out, err
	}
	for _, l := range leases {
		if l.Side != lease.SideRenter || l.StartsAtMs < since.UnixMilli() {
			continue
		}
		d := time.UnixMilli(l.StartsAtMs).UTC().Format(time.DateOnly)
		if days[d] == nil {
			days[d] = &SpendDay{Day: d}
		}
		usd := float64(l.PaidMicro) / 1e6
		days[d].Leases++
		days[d].SpentUSD += usd
		days[d].GPUHours += workedGPUHours(l, r.now())
		out.TotalUSD += usd
	}
	for _, d := range days {
		out.Days = append(out.Days, *d)
	}
	slices.SortFunc(out.Days, func(a, b SpendDay) int { return strings.Compare(a.Day, b.Day) })
	return out, nil
}

// workedGPUHours is how long a lease's GPUs worked, in GPU-hours.
func workedGPUHours(l *store.Lease, now time.Time) float64 {
	if l.WorkStartedMs == 0 {
		return 0
	}
	end := l.WorkFinishedMs
	if end == 0 {
		end = now.UnixMilli()
	}
	return float64(len(l.GPUs)) * float64(max(0, end-l.WorkStartedMs)) / float64(time.Hour/time.Millisecond)
}
