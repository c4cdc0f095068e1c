package node

import (
	"net/http"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/provider"
)

// The provider's part of the API: its own offer, earnings and GPU
// telemetry, turned from the room's types into the API's.

func (b apiBackend) Capacity() (api.Offer, error) {
	if b.n.provider == nil {
		return api.Offer{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "this node is a %s, not a provider", b.n.cfg.Role)
	}
	rec := b.n.provider.Capacity()
	if rec == nil {
		return api.Offer{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "capacity not published yet (waiting for a non-empty routing table)")
	}
	return api.OfferFromCapacity(rec, b.n.cfg.Market.ReliabilityPrior, true), nil
}

func (b apiBackend) Earnings(since time.Time) (api.Earnings, error) {
	if b.n.provider == nil {
		return api.Earnings{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "this node is a %s; earnings are a provider's", b.n.cfg.Role)
	}
	e, err := b.n.provider.Earnings(since)
	if err != nil {
		return api.Earnings{}, err
	}
	out := apiEarnings(e)
	b.n.reload.Lock()
	out.CostsSet = b.n.fileCfg.Costs.Priced()
	b.n.reload.Unlock()
	return out, nil
}

func (b apiBackend) GPUHistory() ([]api.GPUSeries, error) {
	if b.n.provider == nil {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "this node is a %s; GPU telemetry is a provider's", b.n.cfg.Role)
	}
	return apiGPUHistory(b.n.provider.GPUHistory()), nil
}

// apiEarnings is the API's view of a provider's earnings.
func apiEarnings(e provider.Earnings) api.Earnings {
	out := api.Earnings{
		Since: e.Since.UTC(), Until: e.Until.UTC(), FeePct: e.FeePct, TimeZone: e.TimeZone,
		TotalUSD: e.Total.RevenueUSD, FillRate: e.Total.Utilization, EarningsCosts: apiEarningsCosts(e.Total),
	}
	for _, d := range e.Days {
		out.Days = append(out.Days, api.EarningsDay{
			Day: d.Day, Leases: d.Leases, EarnedUSD: d.RevenueUSD, LeasedGPUHours: d.LeasedGPUHours,
			OfferedGPUHours: d.OfferedGPUHours, FillRate: d.Utilization, EarningsCosts: apiEarningsCosts(d.Line),
		})
	}
	for _, g := range e.GPUs {
		out.GPUs = append(out.GPUs, api.EarningsGPU{
			UUID: g.UUID, Model: g.Model, EarnedUSD: g.RevenueUSD, HostEnergyUSD: g.HostEnergyUSD, LeasedEnergyUSD: g.LeasedEnergyUSD,
			LeasedGPUHours:  g.LeasedGPUHours,
			OfferedGPUHours: g.OfferedGPUHours, FillRate: g.Utilization, EarningsCosts: apiEarningsCosts(g.Line),
		})
	}
	return out
}

func apiEarningsCosts(x costs.Line) api.EarningsCosts {
	return api.EarningsCosts{
		FeesUSD: x.FeesUSD, EnergyKWh: x.EnergyKWh, EnergyUSD: x.EnergyUSD,
		DepreciationUSD: x.DepreciationUSD, BandwidthUSD: x.BandwidthUSD, NetUSD: x.NetUSD,
	}
}

// apiGPUHistory is the API's view of the provider's GPU telemetry.
func apiGPUHistory(h []provider.GPUSeries) []api.GPUSeries {
	out := make([]api.GPUSeries, 0, len(h))
	for _, s := range h {
		var pts []api.GPUPoint
		for _, p := range s.Points {
			pts = append(pts, api.GPUPoint{At: p.At, UtilPct: p.UtilPct, PowerW: p.PowerW, TempC: p.TempC, MemUsedMiB: p.MemUsedMiB})
		}
		out = append(out, api.GPUSeries{UUID: s.UUID, Name: s.Name, Points: pts})
	}
	return out
}
