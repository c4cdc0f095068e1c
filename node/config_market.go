package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/provider"
	"github.com/idlegrid/idlegrid/node/words"
)

// validateMarket checks the [gpu], [provider] and [market] sections.
func (c *Config) validateMarket() error {
	bad := func(key, format string, a ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	switch c.GPU.Backend {
	case gpu.BackendAuto, gpu.BackendNVML, gpu.BackendSim, gpu.BackendNone:
	default:
		return bad("gpu.backend", "%q: want auto, nvml, sim or none", c.GPU.Backend)
	}
	for _, p := range c.GPU.Sim.Profiles {
		if _, ok := gpu.LookupProfile(p); !ok {
			return bad("gpu.sim.profiles", "unknown profile %q; known: %s", p, words.OneOf(gpu.ProfileKeys()))
		}
	}
	if c.GPU.Backend == gpu.BackendSim && len(c.GPU.Sim.Profiles) == 0 {
		return bad("gpu.sim.profiles", "backend sim needs at least one profile: %s", words.OneOf(gpu.ProfileKeys()))
	}
	p := &c.Provider
	if c.Role == RoleProvider {
		if !auction.IsCountryCode(p.Region) {
			hint := ""
			if s := auction.SuggestCountry(p.Region); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			return bad("provider.region", "%q is not an ISO 3166-1 alpha-2 country code in lower case%s", p.Region, hint)
		}
	}
	for _, rt := range p.Runtimes {
		if !slices.Contains(auction.KnownRuntimes, rt) {
			return bad("provider.runtimes", "unknown runtime %q; want %s", rt, words.OneOf(auction.KnownRuntimes))
		}
	}
	if len(p.Tiers) == 0 {
		return bad("provider.tiers", "accept at least one tier")
	}
	for _, t := range p.Tiers {
		tier, err := auction.ParseTier(t)
		if err != nil {
			return bad("provider.tiers", "%v", err)
		}
		if usd := p.FloorUSD.For(tier); !(usd > 0) || usd > 1000 {
			return bad("provider.floor_usd."+t, "%v: a tier you accept needs a floor above 0 and at most 1000 USD per GPU-hour", usd)
		}
	}
	if _, err := provider.ParseCalendar(p.Calendar); err != nil {
		return bad("provider.calendar", "%v", err)
	}
	if p.MaxDuration < 0 {
		return bad("provider.max_duration", "must not be negative")
	}
	if p.PreemptNotice < time.Second || p.PreemptNotice > time.Hour {
		return bad("provider.preempt_notice", "%s: must be within 1s..1h", dur(p.PreemptNotice))
	}
	if p.FirmHold < 0 || p.FirmHold > time.Minute {
		return bad("provider.firm_hold", "%s: must be within 0s..1m", dur(p.FirmHold))
	}
	if p.FirmHoldGPUs < 0 || p.FirmHoldGPUs > auction.MaxGPUs {
		return bad("provider.firm_hold_gpus", "%d: must be within 0..%d", p.FirmHoldGPUs, auction.MaxGPUs)
	}
	if p.RecordTTL < 10*time.Second || p.Republish <= 0 || p.Republish >= p.RecordTTL {
		return bad("provider.republish", "need 0 < republish (%s) < record_ttl (%s), record_ttl at least 10s", dur(p.Republish), dur(p.RecordTTL))
	}
	if !(p.CPUShare >= 0 && p.CPUShare <= 1) {
		return bad("provider.cpu_share", "%v: must be within 0..1", p.CPUShare)
	}
	if p.CPUShare > 0 && !(p.CPUFloorUSD > 0 && p.CPUFloorUSD <= 1000) {
		return bad("provider.cpu_floor_usd", "%v: must be above 0 and at most 1000 USD per core-hour when cpu_share is set", p.CPUFloorUSD)
	}
	for key, v := range map[string]int{"provider.cpu_cores": p.CPUCores, "provider.ram_mib": p.RAMMiB, "provider.disk_gib": p.DiskGiB, "provider.bandwidth_mbps": p.BandwidthMbps} {
		if v < 0 {
			return bad(key, "must not be negative (0 means detect)")
		}
	}
	if len(p.Models) > auction.MaxHeldModels {
		return bad("provider.models", "%d models: at most %d", len(p.Models), auction.MaxHeldModels)
	}
	for _, id := range p.Models {
		if _, err := auction.ParseModelID(id); err != nil {
			return bad("provider.models", "%v", err)
		}
	}
	if len(p.PrestageCommand) > 0 && p.ModelsDir == "" {
		return bad("provider.prestage_command", "needs provider.models_dir: the directory the command fetches models into")
	}
	if p.PrestageMinRenters < 1 || p.PrestageMinRenters > auction.MaxAskRenters {
		return bad("provider.prestage_min_renters", "%d: must be within 1..%d", p.PrestageMinRenters, auction.MaxAskRenters)
	}
	if p.PrestageMaxGiB < 1 || p.PrestageMaxGiB > auction.MaxModelSizeMiB>>10 {
		return bad("provider.prestage_max_gib", "%d: must be within 1..%d", p.PrestageMaxGiB, auction.MaxModelSizeMiB>>10)
	}
	if p.PrestagePerDay < 1 || p.PrestagePerDay > 24 {
		return bad("provider.prestage_per_day", "%d: must be within 1..24", p.PrestagePerDay)
	}
	m := c.Market
	if !(m.ReliabilityPrior >= 0 && m.ReliabilityPrior <= 1) {
		return bad("market.reliability_prior", "%v: must be within 0..1", m.ReliabilityPrior)
	}
	if !(m.CanaryRate >= 0 && m.CanaryRate <= 1) {
		return bad("market.canary_rate", "%v: must be within 0..1", m.CanaryRate)
	}
	if m.WantBids < 1 || m.WantBids > auction.MaxWantBids {
		return bad("market.want_bids", "%d: must be within 1..%d", m.WantBids, auction.MaxWantBids)
	}
	if m.MaxWait < 0 || m.MaxWait > auction.MaxJobDuration {
		return bad("market.max_wait", "%s: must be within 0s..%s", dur(m.MaxWait), dur(auction.MaxJobDuration))
	}
	if m.ProviderTimeout < 0 || m.ProviderTimeout > 0 && m.ProviderTimeout < 5*time.Second {
		return bad("market.provider_timeout", "%s: must be 0s (only past the lease's end) or at least 5s (a status poll takes up to 3s past its wait)", dur(m.ProviderTimeout))
	}
	if m.Refresh < 0 || m.SearchTimeout <= 0 {
		return bad("market.search_timeout", "refresh must be >= 0 and search_timeout > 0")
	}
	return nil
}
