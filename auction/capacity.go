package auction

import (
	"errors"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// CapacityVersion is the payload version this build writes and reads.
const CapacityVersion = 1

// MaxCapacitySize bounds a sealed capacity envelope. 64 GPUs with full
// details fit in about 10 KiB; the limit keeps DHT values small.
const MaxCapacitySize = 16 << 10

// CapacityKind is the attest kind of capacity records.
var CapacityKind = attest.Register(attest.Kind{
	Name:        "capacity",
	Domain:      "idlegrid-capacity",
	PayloadType: []byte("/idlegrid/capacity/1"),
	Versions:    []uint{CapacityVersion},
	MaxSize:     MaxCapacitySize,
})

// Capacity is a provider's signed advertisement of what it can run, at what
// floor price, when, and under which policy. It deliberately carries no
// reliability figure: reputation is computed locally by each renter from
// evidence, never self-declared.
type Capacity struct {
	V           uint   `cbor:"v"`
	Peer        string `cbor:"peer"` // peer ID (text form) of the signer
	Seq         uint64 `cbor:"seq"`  // strictly increases with each re-put
	IssuedAtMs  int64  `cbor:"issued_at_ms"`
	ExpiresAtMs int64  `cbor:"expires_at_ms"`
	GPUs        []GPU  `cbor:"gpus,omitempty"`
	Host        Host   `cbor:"host"`
	// CPU is the share of the host offered to CPU-only work (gpus: 0
	// jobs); nil when none is offered. Omitted when nil, so records from
	// before the field encode and decode as they did.
	CPU          *CPUOffer    `cbor:"cpu,omitempty"`
	Region       Region       `cbor:"region"`
	Reachability Reachability `cbor:"reachability"`
	Runtimes     []string     `cbor:"runtimes,omitempty"` // RuntimeDocker, RuntimeWasm
	Floor        FloorPrice   `cbor:"floor"`
	// Calendar lists the weekly windows (UTC) in which the provider takes
	// work; empty means always.
	Calendar []Window `cbor:"calendar,omitempty"`
	Policy   Policy   `cbor:"policy"`
	// Datasets are the CIDs (text form) of datasets cached on this host.
	Datasets []string `cbor:"datasets,omitempty"`
	// Models are the IDs (ParseModelID's canonical form) of the models
	// on this host's disk, at most MaxHeldModels: a job serving one of
	// them starts warm, with no download (cold_start.go). Omitted when
	// empty, so records from before the field encode and decode as they
	// did.
	Models []string `cbor:"models,omitempty"`
	// FingerprintID is the record ID (CID text) of the provider's current
	// hardware fingerprint attestation; empty until one is published.
	FingerprintID string `cbor:"fingerprint_id,omitempty"`
	Version       string `cbor:"version"` // provider software version
}

// GPU is one device as the provider's GPU backend reports it.
type GPU struct {
	Index      uint32 `cbor:"index"`
	UUID       string `cbor:"uuid"`
	Model      string `cbor:"model"` // canonical slug, e.g. "h100-80gb"
	Name       string `cbor:"name"`  // the vendor's name, for display only
	VRAMMiB    uint64 `cbor:"vram_mib"`
	ComputeCap string `cbor:"compute_cap"` // "major.minor", e.g. "9.0"
	Free       bool   `cbor:"free,omitempty"`
	LeaseID    string `cbor:"lease_id,omitempty"` // set only on a leased GPU
	// Held marks a free GPU under a provider's firm hold for a pending bid
	// (seconds at most): renters should not count on it now, but it is
	// not leased. Omitted when false, so records from before the field
	// encode and decode as they did.
	Held bool `cbor:"held,omitempty"`
}

// Host is the machine around the GPUs.
type Host struct {
	CPUCores      uint32 `cbor:"cpu_cores"`
	RAMMiB        uint64 `cbor:"ram_mib"`
	DiskGiB       uint64 `cbor:"disk_gib"`
	BandwidthMbps uint32 `cbor:"bandwidth_mbps"`
}

// CPUOffer is the part of the host's cores and RAM that CPU-only jobs may
// lease (an operator-chosen share of Host), and how much of it is free.
// A CPU-only lease holds cores and RAM, never a GPU.
type CPUOffer struct {
	Cores      uint32 `cbor:"cores"`
	RAMMiB     uint64 `cbor:"ram_mib"`
	FreeCores  uint32 `cbor:"free_cores"`
	FreeRAMMiB uint64 `cbor:"free_ram_mib"`
	// FloorMicro is the lowest price per core-hour in uUSD, for every
	// tier the policy accepts; a CPU-only bid asks it times the cores it
	// leases (at least one) per hour.
	FloorMicro uint64 `cbor:"floor"`
}

// CPUModel is the model a CPU-only bid names in place of a GPU model.
const CPUModel = "cpu"

// CPUCoresOf is how many cores a CPU-only job of res leases: what it asks
// for, at least one.
func CPUCoresOf(res Resources) uint32 { return max(res.CPUCores, 1) }

// Region is where the host is: an ISO 3166-1 alpha-2 country code in lower
// case ("de") and an optional operator-chosen zone ("fra-1").
type Region struct {
	Country string `cbor:"country"`
	Zone    string `cbor:"zone,omitempty"`
}

// Reachability says how renters can dial the provider.
type Reachability string

// Reachability values.
const (
	ReachPublic  Reachability = "public"
	ReachPrivate Reachability = "private"
	ReachRelayed Reachability = "relayed"
)

// Runtimes a provider may offer.
const (
	RuntimeDocker = "docker"
	RuntimeWasm   = "wasm"
)

// KnownRuntimes lists the runtime names records may carry.
var KnownRuntimes = []string{RuntimeDocker, RuntimeWasm}

// Tier is a service lane: gold (reserved), silver (on-demand) or bronze
// (interruptible).
type Tier string

// Tier values.
const (
	TierGold   Tier = "gold"
	TierSilver Tier = "silver"
	TierBronze Tier = "bronze"
)

// Tiers lists every tier, dearest first.
var Tiers = []Tier{TierGold, TierSilver, TierBronze}

// ParseTier returns the tier named s.
func ParseTier(s string) (Tier, error) {
	for _, t := range Tiers {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("auction.ParseTier: unknown tier %q (want gold, silver or bronze)", s)
}

// FloorPrice is the lowest price per tier, in uUSD per GPU-hour. A tier the
// provider does not accept has no meaningful floor (0).
type FloorPrice struct {
	Gold   uint64 `cbor:"gold,omitempty"`
	Silver uint64 `cbor:"silver,omitempty"`
	Bronze uint64 `cbor:"bronze,omitempty"`
}

// For returns the floor for tier t (0 for an unknown tier).
func (f FloorPrice) For(t Tier) uint64 { return TierValue(t, f.Gold, f.Silver, f.Bronze) }

// TierValue returns tier t's value of gold, silver and bronze, and the zero
// value for an unknown tier: the one rule by which every per-tier table is
// read (the floors a capacity record carries, a provider's floors in USD).
func TierValue[T any](t Tier, gold, silver, bronze T) T {
	switch t {
	case TierGold:
		return gold
	case TierSilver:
		return silver
	case TierBronze:
		return bronze
	}
	var zero T
	return zero
}

// Window is a weekly availability window in UTC: minutes [StartMin, EndMin)
// of Day. A window that crosses midnight is written as two windows.
type Window struct {
	Day      time.Weekday `cbor:"day"` // 0 = Sunday
	StartMin uint16       `cbor:"start_min"`
	EndMin   uint16       `cbor:"end_min"` // exclusive, at most 1440
	// FactorPermille scales the floor inside this window (1000 = 1.0x), so
	// an operator can price peak and off-peak hours differently without
	// floats on the wire.
	FactorPermille uint32 `cbor:"factor_permille"`
}

// Policy is what the provider accepts.
type Policy struct {
	Tiers          []Tier `cbor:"tiers"`
	MaxDurationSec uint64 `cbor:"max_duration_s,omitempty"` // 0 = no limit
	// AllowedImages restricts docker images: each entry is a digest prefix
	// ("sha256:3f1a...") or a repository pattern ("ghcr.io/acme/*").
	// Empty means any image.
	AllowedImages []string `cbor:"allowed_images,omitempty"`
	Egress        bool     `cbor:"egress,omitempty"` // jobs may reach the network
}

// RecordKind implements attest.Payload.
func (Capacity) RecordKind() *attest.Kind { return CapacityKind }

// Accepts reports whether the policy accepts tier t.
func (c *Capacity) Accepts(t Tier) bool {
	for _, x := range c.Policy.Tiers {
		if x == t {
			return true
		}
	}
	return false
}

// FreeGPUs counts the GPUs marked free.
func (c *Capacity) FreeGPUs() int {
	n := 0
	for _, g := range c.GPUs {
		if g.Free {
			n++
		}
	}
	return n
}

// Expired reports whether the record has expired at now.
func (c *Capacity) Expired(now time.Time) bool {
	return now.UnixMilli() >= c.ExpiresAtMs
}

// CheckTime reports whether the record is current at now: not expired
// (ErrExpired) and issued no later than MaxClockSkew after now
// (ErrNotYetValid). The DHT's validator and a node taking a record a peer
// served it directly apply the same rule.
func (c *Capacity) CheckTime(now time.Time) error {
	if c.Expired(now) {
		return fmt.Errorf("%w: at %d ms, now %d ms", ErrExpired, c.ExpiresAtMs, now.UnixMilli())
	}
	if c.IssuedAtMs > now.Add(MaxClockSkew).UnixMilli() {
		return fmt.Errorf("%w: issued at %d ms, now %d ms", ErrNotYetValid, c.IssuedAtMs, now.UnixMilli())
	}
	return nil
}

// WindowAt reports whether the calendar is open at t and the price factor
// (permille) that applies. An empty calendar is always open at 1.0x.
func (c *Capacity) WindowAt(t time.Time) (factorPermille uint32, open bool) {
	if len(c.Calendar) == 0 {
		return 1000, true
	}
	t = t.UTC()
	minute := uint16(t.Hour()*60 + t.Minute())
	for _, w := range c.Calendar {
		if w.Day == t.Weekday() && minute >= w.StartMin && minute < w.EndMin {
			return w.FactorPermille, true
		}
	}
	return 0, false
}

// SealCapacity validates c and signs it with key. The key must belong to
// c.Peer: a node only ever advertises itself.
func SealCapacity(c *Capacity, key crypto.PrivKey) ([]byte, error) {
	if c == nil || key == nil {
		return nil, errors.New("auction.SealCapacity: nil capacity or key")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("auction.SealCapacity: %w", err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("auction.SealCapacity: %w", err)
	}
	if id.String() != c.Peer {
		return nil, fmt.Errorf("auction.SealCapacity: %w: key is %s, record names %s", ErrNotOwner, id, c.Peer)
	}
	raw, err := attest.Seal(c, key)
	if err != nil {
		return nil, fmt.Errorf("auction.SealCapacity: %w", err)
	}
	return raw, nil
}

// OpenCapacity verifies and decodes a sealed capacity record (at most
// MaxCapacitySize bytes), validates its structure and checks that the
// signer is the peer the record names. It does not look at the clock: use
// CapacityValidator, or Expired, for that.
func OpenCapacity(raw []byte) (*Capacity, peer.ID, error) {
	c, signer, err := attest.Open[Capacity](raw, MaxCapacitySize)
	if err != nil {
		return nil, "", fmt.Errorf("auction.OpenCapacity: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, "", fmt.Errorf("auction.OpenCapacity: %w", err)
	}
	if signer.String() != c.Peer {
		return nil, "", fmt.Errorf("auction.OpenCapacity: %w: signed by %s, record names %s", ErrNotOwner, signer, c.Peer)
	}
	return c, signer, nil
}
