package provider

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

// Earnings sums a provider's paid vouchers per day and per GPU since
// since, and its fill rate: GPU-hours its own signed telemetry attributes
// to leases over the GPU-hours it attests at all. A lease's pay counts on
// the day it started.
func (p *Provider) Earnings(since time.Time) (api.Earnings, error) {
	out := api.Earnings{Since: since.UTC()}
	days := map[string]*api.EarningsDay{}
	dayOf := func(d string) *api.EarningsDay {
		if days[d] == nil {
			days[d] = &api.EarningsDay{Day: d}
		}
		return days[d]
	}
	gpus := map[string]*api.EarningsGPU{}
	leases, err := p.db.Leases()
	if err != nil {
		return out, err
	}
	for _, l := range leases {
		if l.Side != lease.SideProvider || l.WorkStartedMs < since.UnixMilli() || l.PaidMicro == 0 {
			continue
		}
		usd := float64(l.PaidMicro) / 1e6
		d := dayOf(utcDay(l.WorkStartedMs))
		d.Leases++
		d.EarnedUSD += usd
		out.TotalUSD += usd
		for _, g := range l.GPUs {
			if gpus[g] == nil {
				gpus[g] = &api.EarningsGPU{UUID: g}
			}
			gpus[g].EarnedUSD += usd / float64(len(l.GPUs))
		}
	}
	var leased, offered float64
	{
		raws, err := p.db.ChainEntries(p.self.String(), 0, math.MaxUint64)
		if err != nil {
			return out, err
		}
		for _, raw := range raws {
			e, err := attest.OpenEntry(raw)
			if err != nil || e.Telemetry == nil || e.Telemetry.StartMs < since.UnixMilli() {
				continue
			}
			h := float64(e.Telemetry.EndMs-e.Telemetry.StartMs) / float64(time.Hour/time.Millisecond)
			d := dayOf(utcDay(e.Telemetry.StartMs))
			for _, g := range e.Telemetry.GPUs {
				d.OfferedGPUHours += h
				offered += h
				if g.Lease != "" {
					d.LeasedGPUHours += h
					leased += h
					if gpus[g.UUID] == nil {
						gpus[g.UUID] = &api.EarningsGPU{UUID: g.UUID}
					}
					gpus[g.UUID].LeasedGPUHours += h
				}
			}
		}
	}
	if offered > 0 {
		out.FillRate = leased / offered
	}
	for _, d := range days {
		if d.OfferedGPUHours > 0 {
			d.FillRate = d.LeasedGPUHours / d.OfferedGPUHours
		}
		out.Days = append(out.Days, *d)
	}
	slices.SortFunc(out.Days, func(a, b api.EarningsDay) int { return strings.Compare(a.Day, b.Day) })
	for _, g := range gpus {
		out.GPUs = append(out.GPUs, *g)
	}
	slices.SortFunc(out.GPUs, func(a, b api.EarningsGPU) int { return strings.Compare(a.UUID, b.UUID) })
	return out, nil
}

// utcDay is the UTC day of a Unix-millisecond time.
func utcDay(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.DateOnly) }
