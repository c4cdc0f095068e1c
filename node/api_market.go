package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/provider"
	"github.com/idlegrid/idlegrid/node/trust"
)

func (b apiBackend) Search(ctx context.Context, q, sortBy string, limit int, explain bool) (api.SearchResult, error) {
	res, err := b.n.trust.Search(ctx, q, sortBy, limit, explain)
	if err != nil {
		var qe *query.Error
		if errors.As(err, &qe) {
			return api.SearchResult{}, api.Errorf(http.StatusBadRequest, api.CodeBadQuery, "%v", err)
		}
		return api.SearchResult{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "market search: %v", err)
	}
	out := api.SearchResult{Query: q, Sort: sortBy, Providers: res.Providers, Problems: res.Problems, Offers: []api.Offer{}}
	for _, o := range res.Offers {
		out.Offers = append(out.Offers, toAPIOffer(o.Capacity, o.Reliability, false))
	}
	for _, cs := range res.Explain {
		out.Explain = append(out.Explain, api.ClauseStat{Clause: cs.Clause, Removed: cs.Removed, Remaining: cs.Remaining})
	}
	return out, nil
}

func (b apiBackend) Provider(ctx context.Context, id string) (api.Offer, error) {
	p, err := peer.Decode(id)
	if err != nil {
		return api.Offer{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "%q is not a peer ID: %v", id, err)
	}
	rec, err := b.n.trust.ProviderRecord(ctx, p)
	if err != nil {
		if errors.Is(err, trust.ErrNotFound) {
			return api.Offer{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "%v", err)
		}
		return api.Offer{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "%v", err)
	}
	return toAPIOffer(rec, b.n.cfg.Market.ReliabilityPrior, true), nil
}

func (b apiBackend) Capacity() (api.Offer, error) {
	if b.n.provider == nil {
		return api.Offer{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "this node is a %s, not a provider", b.n.cfg.Role)
	}
	rec := b.n.provider.Capacity()
	if rec == nil {
		return api.Offer{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "capacity not published yet (waiting for a non-empty routing table)")
	}
	return toAPIOffer(rec, b.n.cfg.Market.ReliabilityPrior, true), nil
}

func toAPIOffer(c *auction.Capacity, reliability float64, detail bool) api.Offer {
	o := api.Offer{
		PeerID:       c.Peer,
		Seq:          c.Seq,
		IssuedAt:     time.UnixMilli(c.IssuedAtMs).UTC(),
		ExpiresAt:    time.UnixMilli(c.ExpiresAtMs).UTC(),
		Country:      c.Region.Country,
		Zone:         c.Region.Zone,
		Reachability: string(c.Reachability),
		Runtimes:     c.Runtimes,
		FloorUSD: api.TierPrices{
			Gold:   float64(c.Floor.Gold) / 1e6,
			Silver: float64(c.Floor.Silver) / 1e6,
			Bronze: float64(c.Floor.Bronze) / 1e6,
		},
		FreeGPUs: c.FreeGPUs(),
		Host: api.OfferHost{
			CPUCores: c.Host.CPUCores, RAMMiB: c.Host.RAMMiB, DiskGiB: c.Host.DiskGiB, BandwidthMbps: c.Host.BandwidthMbps,
		},
		CPU:         toAPICPU(c.CPU),
		Images:      c.Policy.AllowedImages,
		Egress:      c.Policy.Egress,
		Datasets:    c.Datasets,
		Version:     c.Version,
		Reliability: reliability,
		Fingerprint: c.FingerprintID,
		GPUs:        []api.OfferGPU{},
	}
	if c.Policy.MaxDurationSec > 0 {
		o.MaxDuration = (time.Duration(c.Policy.MaxDurationSec) * time.Second).String()
	}
	for _, t := range c.Policy.Tiers {
		o.Tiers = append(o.Tiers, string(t))
	}
	for _, g := range c.GPUs {
		o.GPUs = append(o.GPUs, api.OfferGPU{
			Index: g.Index, UUID: g.UUID, Model: g.Model, Name: g.Name, VRAMMiB: g.VRAMMiB,
			ComputeCap: g.ComputeCap, Free: g.Free, LeaseID: g.LeaseID,
		})
	}
	for _, w := range c.Calendar {
		o.Calendar = append(o.Calendar, api.OfferSlot{
			Day:    provider.DayNames[w.Day],
			Start:  fmt.Sprintf("%02d:%02d", w.StartMin/60, w.StartMin%60),
			End:    fmt.Sprintf("%02d:%02d", w.EndMin/60, w.EndMin%60),
			Factor: float64(w.FactorPermille) / 1000,
		})
	}
	if detail {
		o.Extra = &api.OfferDetail{RecordKey: "/" + auction.CapacityNamespace + "/" + c.Peer, Capabilities: auction.CapabilityStrings(c)}
	}
	return o
}

func toAPICPU(o *auction.CPUOffer) *api.OfferCPU {
	if o == nil {
		return nil
	}
	return &api.OfferCPU{Cores: o.Cores, RAMMiB: o.RAMMiB, FreeCores: o.FreeCores, FreeRAMMiB: o.FreeRAMMiB,
		FloorUSDPerCoreHour: float64(o.FloorMicro) / 1e6}
}
