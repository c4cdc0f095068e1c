package auction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Structural limits of a capacity record. They are generous for real
// hardware and exist so a record cannot make a renter do unbounded work.
const (
	MaxGPUs           = 64 // auction/query evaluates a host's GPUs as a 64-bit set
	MaxDatasets       = 64
	MaxWindows        = 7 * 24
	MaxAllowedImages  = 32
	MaxCapacityTTL    = 24 * time.Hour
	MaxModelLen       = 48
	MaxTextLen        = 128            // UUID, name, zone, version, image patterns
	MaxPriceUUSD      = 10_000_000_000 // 10,000 USD per GPU-hour
	MaxFactorPermille = 10_000         // 10x the floor
	maxVRAMMiB        = 4 << 20        // 4 TiB per device
	maxRAMMiB         = 1 << 30        // 1 PiB
	maxDiskGiB        = 1 << 30        // 1 EiB
	maxCPUCores       = 1 << 16
	maxBandwidthMbps  = 1_000_000_000 // 1 Pbit/s
)

// Validate checks the record's structure without a clock. It reports every
// problem it finds, each prefixed with the field path, wrapped in
// ErrInvalidCapacity.
func (c *Capacity) Validate() error {
	var p problems
	if c.V != CapacityVersion {
		p.Addf("v", "version %d, want %d", c.V, CapacityVersion)
	}
	if _, err := peer.Decode(c.Peer); err != nil {
		p.Addf("peer", "%q is not a peer ID", c.Peer)
	}
	if c.Seq == 0 {
		p.Addf("seq", "must be at least 1")
	}
	switch {
	case c.IssuedAtMs <= 0:
		p.Addf("issued_at_ms", "must be positive Unix milliseconds")
	case c.ExpiresAtMs <= c.IssuedAtMs:
		p.Addf("expires_at_ms", "must be after issued_at_ms")
	case c.ExpiresAtMs-c.IssuedAtMs > MaxCapacityTTL.Milliseconds():
		p.Addf("expires_at_ms", "lifetime %s exceeds %s",
			time.Duration(c.ExpiresAtMs-c.IssuedAtMs)*time.Millisecond, MaxCapacityTTL)
	}
	if len(c.GPUs) == 0 && len(c.Runtimes) == 0 {
		p.Addf("gpus", "record advertises neither GPUs nor runtimes")
	}
	c.validateGPUs(&p)
	c.validateHost(&p)
	validateCPUOffer(&p, c.CPU, c.Host)
	c.validateRegion(&p)
	switch c.Reachability {
	case ReachPublic, ReachPrivate, ReachRelayed:
	default:
		p.Addf("reachability", "%q is not public, private or relayed", c.Reachability)
	}
	validateSet(&p, "runtimes", c.Runtimes, func(s string) bool { return slices.Contains(KnownRuntimes, s) },
		"is not a known runtime (docker, wasm)")
	c.validatePolicy(&p)
	c.validateCalendar(&p)
	validateSet(&p, "datasets", c.Datasets, validDatasetCID, "is not a CID with a hash of at most 80 bytes")
	if len(c.Datasets) > MaxDatasets {
		p.Addf("datasets", "%d entries, at most %d", len(c.Datasets), MaxDatasets)
	}
	validateSet(&p, "models", c.Models, IsModelID, "is not a model ID in canonical form (a CID, or name@sha256:<64 lower-case hex>)")
	if len(c.Models) > MaxHeldModels {
		p.Addf("models", "%d entries, at most %d", len(c.Models), MaxHeldModels)
	}
	if c.FingerprintID != "" {
		if _, err := cid.Decode(c.FingerprintID); err != nil {
			p.Addf("fingerprint_id", "%q is not a CID", c.FingerprintID)
		}
	}
	if !attest.Printable(c.Version, MaxTextLen) || c.Version == "" {
		p.Addf("version", "must be 1..%d printable ASCII characters", MaxTextLen)
	}
	return p.Err(ErrInvalidCapacity, "")
}

func (c *Capacity) validateGPUs(p *problems) {
	if len(c.GPUs) > MaxGPUs {
		p.Addf("gpus", "%d entries, at most %d", len(c.GPUs), MaxGPUs)
		return
	}
	seenIdx := map[uint32]bool{}
	seenUUID := map[string]bool{}
	for i, g := range c.GPUs {
		path := fmt.Sprintf("gpus[%d]", i)
		if seenIdx[g.Index] {
			p.Addf(path+".index", "duplicate index %d", g.Index)
		}
		seenIdx[g.Index] = true
		if g.UUID == "" || !attest.Printable(g.UUID, MaxTextLen) {
			p.Addf(path+".uuid", "must be 1..%d printable ASCII characters", MaxTextLen)
		} else if seenUUID[g.UUID] {
			p.Addf(path+".uuid", "duplicate UUID %q", g.UUID)
		}
		seenUUID[g.UUID] = true
		if !IsModelSlug(g.Model) {
			p.Addf(path+".model", "%q is not a model slug (lower-case letters and digits joined by '-', at most %d)", g.Model, MaxModelLen)
		}
		if !attest.Printable(g.Name, MaxTextLen) {
			p.Addf(path+".name", "must be at most %d printable ASCII characters", MaxTextLen)
		}
		if g.VRAMMiB == 0 || g.VRAMMiB > maxVRAMMiB {
			p.Addf(path+".vram_mib", "%d out of range 1..%d", g.VRAMMiB, maxVRAMMiB)
		}
		if _, _, err := ParseComputeCap(g.ComputeCap); err != nil {
			p.Addf(path+".compute_cap", "%v", err)
		}
		if g.Free && g.LeaseID != "" {
			p.Addf(path+".lease_id", "a free GPU cannot carry a lease")
		}
		if g.Held && !g.Free {
			p.Addf(path+".held", "only a free GPU can be under a firm hold")
		}
		if !attest.Printable(g.LeaseID, MaxTextLen) {
			p.Addf(path+".lease_id", "must be at most %d printable ASCII characters", MaxTextLen)
		}
	}
}

func (c *Capacity) validateHost(p *problems) {
	h := c.Host
	if h.CPUCores == 0 || h.CPUCores > maxCPUCores {
		p.Addf("host.cpu_cores", "%d out of range 1..%d", h.CPUCores, maxCPUCores)
	}
	if h.RAMMiB == 0 || h.RAMMiB > maxRAMMiB {
		p.Addf("host.ram_mib", "%d out of range 1..%d", h.RAMMiB, maxRAMMiB)
	}
	if h.DiskGiB > maxDiskGiB {
		p.Addf("host.disk_gib", "%d exceeds %d", h.DiskGiB, maxDiskGiB)
	}
	if h.BandwidthMbps > maxBandwidthMbps {
		p.Addf("host.bandwidth_mbps", "%d exceeds %d", h.BandwidthMbps, maxBandwidthMbps)
	}
}

func (c *Capacity) validateRegion(p *problems) {
	if !IsCountryCode(c.Region.Country) {
		p.Addf("region.country", "%q is not a lower-case ISO 3166-1 alpha-2 code", c.Region.Country)
	}
	if c.Region.Zone != "" && !IsModelSlug(c.Region.Zone) {
		p.Addf("region.zone", "%q is not a slug (lower-case letters and digits joined by '-')", c.Region.Zone)
	}
}

func (c *Capacity) validatePolicy(p *problems) {
	pol := c.Policy
	if len(pol.Tiers) == 0 {
		p.Addf("policy.tiers", "must accept at least one tier")
	}
	validateSet(p, "policy.tiers", pol.Tiers, func(t Tier) bool { return slices.Contains(Tiers, t) },
		"is not gold, silver or bronze")
	for _, t := range Tiers {
		f := c.Floor.For(t)
		if f > MaxPriceUUSD {
			p.Addf("floor."+string(t), "%d uUSD exceeds %d", f, uint64(MaxPriceUUSD))
		}
		// A zero floor on an accepted tier is almost always a forgotten
		// field, and it would make the provider win every auction.
		if f == 0 && slices.Contains(pol.Tiers, t) {
			p.Addf("floor."+string(t), "tier is accepted but has no floor price")
		}
	}
	if len(pol.AllowedImages) > MaxAllowedImages {
		p.Addf("policy.allowed_images", "%d entries, at most %d", len(pol.AllowedImages), MaxAllowedImages)
	}
	validateSet(p, "policy.allowed_images", pol.AllowedImages, validImagePattern,
		"is not a digest prefix (sha256:<hex>) or image pattern")
}

func (c *Capacity) validateCalendar(p *problems) {
	if len(c.Calendar) > MaxWindows {
		p.Addf("calendar", "%d windows, at most %d", len(c.Calendar), MaxWindows)
		return
	}
	for i, w := range c.Calendar {
		path := fmt.Sprintf("calendar[%d]", i)
		if w.Day < time.Sunday || w.Day > time.Saturday {
			p.Addf(path+".day", "%d is not 0 (Sunday) .. 6 (Saturday)", w.Day)
		}
		if w.StartMin >= w.EndMin || w.EndMin > 1440 {
			p.Addf(path, "minutes [%d, %d) are not a range within 0..1440", w.StartMin, w.EndMin)
		}
		if w.FactorPermille == 0 || w.FactorPermille > MaxFactorPermille {
			p.Addf(path+".factor_permille", "%d out of range 1..%d", w.FactorPermille, MaxFactorPermille)
		}
		// Overlaps would make the price at an instant ambiguous.
		for j := range i {
			o := c.Calendar[j]
			if o.Day == w.Day && w.StartMin < o.EndMin && o.StartMin < w.EndMin {
				p.Addf(path, "overlaps calendar[%d]", j)
			}
		}
	}
}

// IsModelSlug reports whether s is a canonical slug: lower-case ASCII
// letters and digits in groups joined by single '-', at most MaxModelLen.
func IsModelSlug(s string) bool {
	if s == "" || len(s) > MaxModelLen || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-') {
			return false
		}
	}
	return true
}

// ParseComputeCap parses a CUDA compute capability "major.minor" (each one
// or two digits) into numbers, so "10.0" sorts after "9.0".
func ParseComputeCap(s string) (major, minor int, err error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok || !digits(maj, 1, 2) || !digits(min, 1, 2) {
		return 0, 0, fmt.Errorf("compute capability %q is not major.minor", s)
	}
	major, _ = strconv.Atoi(maj)
	minor, _ = strconv.Atoi(min)
	return major, minor, nil
}

func digits(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func validDatasetCID(s string) bool {
	c, err := cid.Decode(s)
	return err == nil && len(c.Hash()) <= attest.MaxCIDHashLen
}

func validImagePattern(s string) bool {
	if hex, ok := strings.CutPrefix(s, "sha256:"); ok {
		return len(hex) > 0 && len(hex) <= 64 && attest.IsLowerHex(hex)
	}
	if s == "" || len(s) > MaxTextLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		ok := b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || strings.IndexByte("./_-:*@", b) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// validateSet checks that every element passes ok and appears once.
func validateSet[T comparable](p *problems, path string, xs []T, ok func(T) bool, what string) {
	seen := make(map[T]bool, len(xs))
	for i, x := range xs {
		if !ok(x) {
			p.Addf(fmt.Sprintf("%s[%d]", path, i), "%q %s", fmt.Sprint(x), what)
		}
		if seen[x] {
			p.Addf(fmt.Sprintf("%s[%d]", path, i), "duplicate %q", fmt.Sprint(x))
		}
		seen[x] = true
	}
}

// problems collects validation failures so an operator sees all of them at
// once instead of fixing a config one error per restart.
type problems = attest.Problems

// validateCPUOffer checks a CPU share against the host it is part of (of
// a capacity record or a digest); nil is no share.
func validateCPUOffer(p *problems, o *CPUOffer, host Host) {
	if o == nil {
		return
	}
	switch {
	case o.Cores == 0 || o.Cores > host.CPUCores:
		p.Addf("cpu.cores", "%d out of range 1..%d (host cores)", o.Cores, host.CPUCores)
	case o.FreeCores > o.Cores:
		p.Addf("cpu.free_cores", "%d exceeds cores %d", o.FreeCores, o.Cores)
	}
	switch {
	case o.RAMMiB > host.RAMMiB:
		p.Addf("cpu.ram_mib", "%d exceeds host RAM %d", o.RAMMiB, host.RAMMiB)
	case o.FreeRAMMiB > o.RAMMiB:
		p.Addf("cpu.free_ram_mib", "%d exceeds ram_mib %d", o.FreeRAMMiB, o.RAMMiB)
	}
	if o.FloorMicro == 0 || o.FloorMicro > MaxPriceUUSD {
		p.Addf("cpu.floor", "%d uUSD out of range 1..%d", o.FloorMicro, uint64(MaxPriceUUSD))
	}
}
