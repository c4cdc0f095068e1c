package auction

import (
	"fmt"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// Validate checks the digest's structure without a clock. It reports every
// problem, each prefixed with its field path, wrapped in ErrInvalidMessage.
func (d *Digest) Validate() error {
	var p problems
	d.validateLots(&p)
	attest.CheckPeerID(&p, "peer", d.Peer)
	if d.Seq == 0 {
		p.Addf("seq", "must be at least 1")
	}
	msgCheckLifetime(&p, d.IssuedAtMs, d.ExpiresAtMs, "expires_at_ms", MaxDigestTTL.Milliseconds())
	if !IsCountryCode(d.Region.Country) {
		p.Addf("region.country", "%q is not a lower-case ISO 3166-1 alpha-2 code", d.Region.Country)
	}
	if d.Region.Zone != "" && !IsModelSlug(d.Region.Zone) {
		p.Addf("region.zone", "%q is not a slug", d.Region.Zone)
	}
	switch d.Reachability {
	case ReachPublic, ReachPrivate, ReachRelayed:
	default:
		p.Addf("reachability", "%q is not public, private or relayed", d.Reachability)
	}
	validateSet(&p, "runtimes", d.Runtimes, func(s string) bool { return slices.Contains(KnownRuntimes, s) },
		"is not a known runtime (docker, wasm)")
	if len(d.Models) == 0 && len(d.Runtimes) == 0 {
		p.Addf("models", "digest advertises neither GPUs nor runtimes")
	}
	h := d.Host
	if h.CPUCores == 0 || h.CPUCores > maxCPUCores {
		p.Addf("host.cpu_cores", "%d out of range 1..%d", h.CPUCores, maxCPUCores)
	}
	if h.RAMMiB == 0 || h.RAMMiB > maxRAMMiB {
		p.Addf("host.ram_mib", "%d out of range 1..%d", h.RAMMiB, maxRAMMiB)
	}
	if h.DiskGiB > maxDiskGiB || h.BandwidthMbps > maxBandwidthMbps {
		p.Addf("host", "disk_gib %d or bandwidth_mbps %d out of range", h.DiskGiB, h.BandwidthMbps)
	}
	accepted := 0
	for _, t := range Tiers {
		if f := d.Floor.For(t); f > MaxPriceUUSD {
			p.Addf("floor."+string(t), "%d uUSD exceeds %d", f, uint64(MaxPriceUUSD))
		} else if f > 0 {
			accepted++
		}
	}
	if accepted == 0 {
		p.Addf("floor", "no tier has a floor: the digest offers nothing")
	}
	if d.MaxDurationSec > uint64(MaxJobDuration/time.Second) {
		p.Addf("max_s", "%d exceeds %d", d.MaxDurationSec, uint64(MaxJobDuration/time.Second))
	}
	d.validateModels(&p)
	validateCPUOffer(&p, d.CPU, d.Host)
	d.validateCalendar(&p)
	return messageErr(&p, DigestKind.Name)
}

func (d *Digest) validateModels(p *problems) {
	if len(d.Models) > MaxDigestModels {
		p.Addf("models", "%d entries, at most %d", len(d.Models), MaxDigestModels)
		return
	}
	total := 0
	seen := map[string]bool{}
	for i, m := range d.Models {
		path := fmt.Sprintf("models[%d]", i)
		if !IsModelSlug(m.Model) {
			p.Addf(path+".model", "%q is not a model slug", m.Model)
		} else if seen[m.Model] {
			p.Addf(path+".model", "duplicate %q", m.Model)
		}
		seen[m.Model] = true
		if m.VRAMMiB == 0 || m.VRAMMiB > maxVRAMMiB {
			p.Addf(path+".vram_mib", "%d out of range 1..%d", m.VRAMMiB, maxVRAMMiB)
		}
		if _, _, err := ParseComputeCap(m.ComputeCap); err != nil {
			p.Addf(path+".cc", "%v", err)
		}
		if m.Total == 0 || m.Total > MaxGPUs {
			p.Addf(path+".total", "%d out of range 1..%d", m.Total, MaxGPUs)
		}
		if uint64(m.Free)+uint64(m.Held) > uint64(m.Total) {
			p.Addf(path, "free %d + held %d exceed total %d", m.Free, m.Held, m.Total)
		}
		total += int(min(m.Total, MaxGPUs+1))
	}
	if total > MaxGPUs {
		p.Addf("models", "%d GPUs in all, at most %d", total, MaxGPUs)
	}
}

// validateCalendar checks the calendar fields: an open period ends after
// the digest is issued and within MaxOpenPeriod, and a closed host offers
// nothing.
func (d *Digest) validateCalendar(p *problems) {
	if u := d.OpenUntilMs; u != 0 && (u <= d.IssuedAtMs || u-d.IssuedAtMs > MaxOpenPeriod.Milliseconds()) {
		p.Addf("open_until_ms", "%d not within (issued_at_ms, issued_at_ms + %d]", u, MaxOpenPeriod.Milliseconds())
	}
	if !d.Closed {
		return
	}
	if d.OpenUntilMs != 0 {
		p.Addf("closed", "a closed calendar has no open period to end")
	}
	for i, m := range d.Models {
		if m.Free != 0 || m.Held != 0 {
			p.Addf(fmt.Sprintf("models[%d]", i), "free %d, held %d while the calendar is closed", m.Free, m.Held)
		}
	}
	if d.CPU != nil && (d.CPU.FreeCores != 0 || d.CPU.FreeRAMMiB != 0) {
		p.Addf("cpu", "cores free while the calendar is closed")
	}
}
