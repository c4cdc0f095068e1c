package api

import (
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// OfferFromCapacity is the API's view of a provider's capacity record;
// detail adds the record key and capability keys.
func OfferFromCapacity(c *auction.Capacity, reliability float64, detail bool) Offer {
	o := Offer{
		PeerID:       c.Peer,
		Seq:          c.Seq,
		IssuedAt:     time.UnixMilli(c.IssuedAtMs).UTC(),
		ExpiresAt:    time.UnixMilli(c.ExpiresAtMs).UTC(),
		Country:      c.Region.Country,
		Zone:         c.Region.Zone,
		Reachability: string(c.Reachability),
		Runtimes:     c.Runtimes,
		FloorUSD: TierPrices{
			Gold:   float64(c.Floor.Gold) / 1e6,
			Silver: float64(c.Floor.Silver) / 1e6,
			Bronze: float64(c.Floor.Bronze) / 1e6,
		},
		FreeGPUs: c.FreeGPUs(),
		CPU:      cpuOffer(c.CPU),
		Host: OfferHost{
			CPUCores: c.Host.CPUCores, RAMMiB: c.Host.RAMMiB, DiskGiB: c.Host.DiskGiB, BandwidthMbps: c.Host.BandwidthMbps,
		},
		Images:      c.Policy.AllowedImages,
		Egress:      c.Policy.Egress,
		Datasets:    c.Datasets,
		Models:      c.Models,
		Version:     c.Version,
		Reliability: reliability,
		Fingerprint: c.FingerprintID,
		GPUs:        []OfferGPU{},
	}
	if c.Policy.MaxDurationSec > 0 {
		o.MaxDuration = (time.Duration(c.Policy.MaxDurationSec) * time.Second).String()
	}
	for _, t := range c.Policy.Tiers {
		o.Tiers = append(o.Tiers, string(t))
	}
	for _, g := range c.GPUs {
		o.GPUs = append(o.GPUs, OfferGPU{
			Index: g.Index, UUID: g.UUID, Model: g.Model, Name: g.Name, VRAMMiB: g.VRAMMiB,
			ComputeCap: g.ComputeCap, Free: g.Free, LeaseID: g.LeaseID,
		})
	}
	for _, w := range c.Calendar {
		o.Calendar = append(o.Calendar, OfferSlot{
			Day:    strings.ToLower(time.Weekday(w.Day).String()[:3]),
			Start:  fmt.Sprintf("%02d:%02d", w.StartMin/60, w.StartMin%60),
			End:    fmt.Sprintf("%02d:%02d", w.EndMin/60, w.EndMin%60),
			Factor: float64(w.FactorPermille) / 1000,
		})
	}
	if detail {
		caps := []string{auction.CapabilityProvider}
		for _, k := range auction.CapabilityKeys(c)[1:] {
			caps = append(caps, k.String()) // the datasets
		}
		o.Extra = &OfferDetail{RecordKey: "/" + auction.CapacityNamespace + "/" + c.Peer, Capabilities: caps}
	}
	return o
}

// cpuOffer is the API's view of a provider's CPU share (nil: none).
func cpuOffer(o *auction.CPUOffer) *OfferCPU {
	if o == nil {
		return nil
	}
	return &OfferCPU{Cores: o.Cores, RAMMiB: o.RAMMiB, FreeCores: o.FreeCores, FreeRAMMiB: o.FreeRAMMiB,
		FloorUSDPerCoreHour: float64(o.FloorMicro) / 1e6}
}
