package provider

import (
	"fmt"
	"math"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
)

// Earnings prices the provider's range [since, now): renters' paid
// vouchers (a lease's pay counts on the day it started) against the costs
// of [costs], per day and per GPU, from its own signed telemetry; the fill
// rate is GPU-hours that telemetry attributes to leases over the GPU-hours
// it attests at all.
func (p *Provider) Earnings(since time.Time) (api.Earnings, error) {
	cc := p.costsConfig()
	m, err := costs.NewModel(cc)
	if err != nil {
		return api.Earnings{}, fmt.Errorf("provider.Earnings: %w", err)
	}
	until := p.now()
	r, err := p.ledger(m, since, until)
	if err != nil {
		return api.Earnings{}, fmt.Errorf("provider.Earnings: %w", err)
	}
	out := api.Earnings{
		Since: since.UTC(), Until: until.UTC(), FeePct: cc.FeePct, TimeZone: m.Loc.String(), TotalUSD: r.Total.RevenueUSD, FillRate: r.Total.Utilization,
		EarningsCosts: costsOf(r.Total),
	}
	for _, d := range r.Days {
		out.Days = append(out.Days, api.EarningsDay{
			Day: d.Day, Leases: d.Leases, EarnedUSD: d.RevenueUSD, LeasedGPUHours: d.LeasedGPUHours,
			OfferedGPUHours: d.OfferedGPUHours, FillRate: d.Utilization, EarningsCosts: costsOf(d.Line),
		})
	}
	for _, g := range r.GPUs {
		out.GPUs = append(out.GPUs, api.EarningsGPU{
			UUID: g.UUID, Model: g.Model, EarnedUSD: g.RevenueUSD, HostEnergyUSD: g.HostEnergyUSD, LeasedEnergyUSD: g.LeasedEnergyUSD,
			LeasedGPUHours:  g.LeasedGPUHours,
			OfferedGPUHours: g.OfferedGPUHours, FillRate: g.Utilization, EarningsCosts: costsOf(g.Line),
		})
	}
	return out, nil
}

// ledger feeds the store's paid leases and the provider's own telemetry
// chain into a costs ledger over [since, until).
func (p *Provider) ledger(m costs.Model, since, until time.Time) (costs.Report, error) {
	devs, _ := p.gpus.Devices() // the GPUs it could read; a failed one still shows by its telemetry
	inv := make([]costs.GPU, 0, len(devs))
	for _, d := range devs {
		inv = append(inv, costs.GPU{UUID: d.UUID, Model: gpu.ModelSlug(d.Name, d.MemoryMiB)})
	}
	l := costs.NewLedger(m, since, until, inv)
	leases, err := p.db.Leases()
	if err != nil {
		return costs.Report{}, err
	}
	for _, ls := range leases {
		if ls.Side != lease.SideProvider || ls.PaidMicro == 0 {
			continue
		}
		l.AddPayment(costs.Payment{At: time.UnixMilli(ls.WorkStartedMs), GPUs: ls.GPUs, USD: float64(ls.PaidMicro) / 1e6})
	}
	raws, err := p.db.ChainEntries(p.self.String(), 0, math.MaxUint64)
	if err != nil {
		return costs.Report{}, err
	}
	for _, raw := range raws {
		e, err := attest.OpenEntry(raw)
		if err != nil || e.Telemetry == nil || e.Telemetry.EndMs <= since.UnixMilli() {
			continue
		}
		l.AddTelemetry(e.Telemetry)
	}
	return l.Report(), nil
}

func costsOf(x costs.Line) api.EarningsCosts {
	return api.EarningsCosts{
		FeesUSD: x.FeesUSD, EnergyKWh: x.EnergyKWh, EnergyUSD: x.EnergyUSD,
		DepreciationUSD: x.DepreciationUSD, BandwidthUSD: x.BandwidthUSD, NetUSD: x.NetUSD,
	}
}
