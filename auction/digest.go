package auction

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// A capacity digest is the compact, signed summary of a capacity record
// that providers gossip on their shards' digest topics (docs/protocol.md
// §6.4), so every node holds a complete market view without walking the
// DHT. The full record stays in the DHT for details a digest leaves out
// (GPU UUIDs, datasets, the calendar, the image allowlist).
const (
	// DigestVersionNoLots is version 1, before lots: written whenever a
	// digest names no lots (DigestVersion, digest_lots.go, when it does).
	DigestVersionNoLots = 1
	// MaxDigestSize bounds a sealed digest: a typical one (one or two
	// models) is about 400 bytes, the largest valid one about 2.1 KiB.
	MaxDigestSize = 3 << 10
	// MaxDigestModels bounds the models one digest lists.
	MaxDigestModels = 16
	// MaxDigestTTL bounds a digest's lifetime: digests are re-gossiped on
	// change and on a timer, so a short life bounds how long a dead
	// provider stays in everyone's view.
	MaxDigestTTL = 2 * time.Hour
)

// DigestKind is the attest kind of capacity digests.
var DigestKind = attest.Register(attest.Kind{
	Name: "capacity-digest", Domain: "idlegrid-digest", PayloadType: []byte("/idlegrid/digest/1"),
	Versions: []uint{DigestVersionNoLots, DigestVersion}, MaxSize: MaxDigestSize,
})

// Digest is a provider's signed capacity summary.
type Digest struct {
	V    uint   `cbor:"v"`
	Peer string `cbor:"peer"` // peer ID of the signer
	// Seq strictly increases with each digest the provider issues; the
	// highest wins. CapSeq is the Seq of the capacity record it
	// summarizes, so a renter fetching the record knows which to expect.
	Seq          uint64       `cbor:"seq"`
	CapSeq       uint64       `cbor:"cap_seq"`
	IssuedAtMs   int64        `cbor:"issued_at_ms"`
	ExpiresAtMs  int64        `cbor:"expires_at_ms"`
	Region       Region       `cbor:"region"`
	Reachability Reachability `cbor:"reachability"`
	Runtimes     []string     `cbor:"runtimes,omitempty"`
	Host         Host         `cbor:"host"`
	// Floor is the price per tier now: the record's floor times the
	// calendar factor of the open window (never below the floor, which
	// is what Quote asks at least); 0 for a tier not accepted.
	Floor          FloorPrice    `cbor:"floor"`
	MaxDurationSec uint64        `cbor:"max_s,omitempty"`
	Egress         bool          `cbor:"egress,omitempty"`
	Models         []DigestModel `cbor:"models,omitempty"`
	// CPU is the record's CPU share with its floor at the calendar's
	// factor now (no core free outside the calendar); nil when none is
	// offered, and omitted then, so digests from before encode as they
	// did.
	CPU *CPUOffer `cbor:"cpu,omitempty"`
	// OpenUntilMs is when the calendar's open period holding IssuedAtMs
	// ends (Unix ms, within MaxOpenPeriod), so a bidder can tell whether
	// the host can still take a job (TakesNow) without the record. 0
	// (absent): no end within a week (no calendar, or one open all
	// week), or closed. Closed: the calendar was closed at IssuedAtMs,
	// which is why nothing is free (the GPUs are not busy). Both are
	// omitted when zero, so digests from before them decode, and read as
	// always open.
	OpenUntilMs int64 `cbor:"open_until_ms,omitempty"`
	Closed      bool  `cbor:"closed,omitempty"`
	// Lots (version 2 only) is how many lots the provider puts each of
	// its shards in, where more than one (digest_lots.go); absent for a
	// shard of one lot.
	Lots map[Shard]uint32 `cbor:"lots,omitempty"`
}

// DigestModel counts a provider's GPUs of one model.
type DigestModel struct {
	Model      string `cbor:"model"`
	VRAMMiB    uint64 `cbor:"vram_mib"` // the least among the model's GPUs
	ComputeCap string `cbor:"cc"`
	Total      uint32 `cbor:"total"`
	// Free GPUs are offerable now; Held are free in the record but under
	// a firm hold for a pending bid (they may be offered again soon; bid
	// selection counts them as free, DigestFitsOn). The rest (Total -
	// Free - Held) are leased or closed by the calendar.
	Free uint32 `cbor:"free,omitempty"`
	Held uint32 `cbor:"held,omitempty"`
}

// RecordKind implements attest.Payload.
func (Digest) RecordKind() *attest.Kind { return DigestKind }

// DigestInput is what NewDigest summarizes.
type DigestInput struct {
	Capacity *Capacity
	// Held are UUIDs of free GPUs under a firm hold (the node owns holds).
	Held map[string]bool
	Seq  uint64 // the digest's own sequence number, >= 1
	Now  time.Time
	// TTL is the digest's lifetime (at most MaxDigestTTL, and never past
	// the record's expiry); 0 means MaxDigestTTL.
	TTL time.Duration
	// Withdrawn makes the provider's last digest as it leaves on purpose:
	// nothing is free, and with a short TTL it supersedes the digest every
	// node holds and then expires, taking the provider out of their market
	// views (docs/protocol.md §6.4).
	Withdrawn bool
	// Lots is how many lots the provider puts each of its shards in
	// (LotsFor); a shard of one lot, or one the digest is not on, is left
	// out.
	Lots map[Shard]int
}

// NewDigest summarizes a capacity record at in.Now. Outside the record's
// calendar no GPU is free and the digest says Closed; inside it, it says
// when the open period ends (OpenUntilMs). Models are grouped by slug (more GPUs first,
// then slug; at most MaxDigestModels). The result is validated.
func NewDigest(in DigestInput) (*Digest, error) {
	c := in.Capacity
	if c == nil {
		return nil, errors.New("auction.NewDigest: nil capacity")
	}
	ttl := in.TTL
	if ttl <= 0 || ttl > MaxDigestTTL {
		ttl = MaxDigestTTL
	}
	nowMs := in.Now.UnixMilli()
	d := &Digest{
		V: DigestVersionNoLots, Peer: c.Peer, Seq: in.Seq, CapSeq: c.Seq,
		IssuedAtMs: nowMs, ExpiresAtMs: min(nowMs+ttl.Milliseconds(), c.ExpiresAtMs),
		Region: c.Region, Reachability: c.Reachability, Runtimes: slices.Clone(c.Runtimes), Host: c.Host,
		MaxDurationSec: c.Policy.MaxDurationSec, Egress: c.Policy.Egress,
	}
	factor, _ := c.WindowAt(in.Now)
	until, open := c.OpenUntil(in.Now)
	d.Closed = !open
	if !until.IsZero() {
		d.OpenUntilMs = until.UnixMilli()
	}
	open = open && !in.Withdrawn
	for _, t := range Tiers {
		f := c.Floor.For(t)
		if !c.Accepts(t) || f == 0 {
			continue
		}
		now := max(f, uint64(math.Round(float64(f)*float64(factor)/1000)))
		d.Floor.set(t, min(now, MaxPriceUUSD))
	}
	if c.CPU != nil {
		o := *c.CPU
		o.FloorMicro = min(max(o.FloorMicro, uint64(math.Round(float64(o.FloorMicro)*float64(factor)/1000))), MaxPriceUUSD)
		if !open {
			o.FreeCores, o.FreeRAMMiB = 0, 0
		}
		d.CPU = &o
	}
	byModel := map[string]*DigestModel{}
	for _, g := range c.GPUs {
		m := byModel[g.Model]
		if m == nil {
			m = &DigestModel{Model: g.Model, VRAMMiB: g.VRAMMiB, ComputeCap: g.ComputeCap}
			byModel[g.Model] = m
		}
		m.Total++
		m.VRAMMiB = min(m.VRAMMiB, g.VRAMMiB)
		if ccAtLeast(m.ComputeCap, g.ComputeCap) {
			m.ComputeCap = g.ComputeCap // the least, like VRAM
		}
		switch {
		case !g.Free || !open:
		case in.Held[g.UUID]:
			m.Held++
		default:
			m.Free++
		}
	}
	for _, m := range byModel {
		d.Models = append(d.Models, *m)
	}
	slices.SortFunc(d.Models, func(a, b DigestModel) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Model, b.Model))
	})
	d.Models = d.Models[:min(len(d.Models), MaxDigestModels)]
	for _, s := range d.Shards() {
		if g := in.Lots[s]; ValidLots(g) {
			if d.Lots == nil {
				// Version 2 only when it names lots: every other digest
				// stays readable by nodes from before lots (§5.1).
				d.V, d.Lots = DigestVersion, map[Shard]uint32{}
			}
			d.Lots[s] = uint32(g)
		}
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("auction.NewDigest: %w", err)
	}
	return d, nil
}

func (f *FloorPrice) set(t Tier, v uint64) {
	switch t {
	case TierGold:
		f.Gold = v
	case TierSilver:
		f.Silver = v
	case TierBronze:
		f.Bronze = v
	}
}

// SealDigest validates d and signs it with key, which must be d.Peer's.
func SealDigest(d *Digest, key crypto.PrivKey) ([]byte, error) {
	if d == nil {
		return nil, fmt.Errorf("auction.SealDigest: %w", errNilMessage)
	}
	return sealMessage("SealDigest", d, d.Peer, key)
}

// OpenDigest verifies and decodes a sealed digest (at most MaxDigestSize
// bytes), validates it and checks that the signer is d.Peer. It does not
// look at the clock: use CheckTime for that.
func OpenDigest(raw []byte) (*Digest, peer.ID, error) {
	return openMessage[Digest]("OpenDigest", raw, MaxDigestSize, func(d *Digest) string { return d.Peer })
}

// CheckTime refuses a digest expired at now (ErrExpired) or issued more
// than MaxClockSkew after now (ErrNotYetValid).
func (d *Digest) CheckTime(now time.Time) error {
	nowMs := now.UnixMilli()
	if nowMs >= d.ExpiresAtMs {
		return fmt.Errorf("auction.Digest.CheckTime: %w: at %d ms, now %d ms", ErrExpired, d.ExpiresAtMs, nowMs)
	}
	if d.IssuedAtMs > now.Add(MaxClockSkew).UnixMilli() {
		return fmt.Errorf("auction.Digest.CheckTime: %w: issued at %d ms, now %d ms", ErrNotYetValid, d.IssuedAtMs, nowMs)
	}
	return nil
}

// DigestCrossing is how much earlier than the digest a node holds an
// older digest of the same provider may be issued and still be one an
// honest relay passes on late: the provider published the two within
// this long, and the newer one took a faster path. A relay that keeps up
// forwards within seconds, and the gossip seen cache (two minutes)
// bounds how late one serves a message from it, so two minutes covers
// those; a relay minutes behind (a saturated machine) can be later still,
// which node/trust allows each peer a few times (lateDigests).
const DigestCrossing = 2 * time.Minute

// CrossedInFlight reports whether d, older than held (held supersedes
// it), was issued at most DigestCrossing before held: the two were in
// flight together, and the peer that passed d on did so honestly.
// Replaying an older digest than that is nothing an honest relay does.
// Both dates come from the provider's own clock, so no skew enters.
func (d *Digest) CrossedInFlight(held *Digest) bool {
	return held.Supersedes(d) && held.IssuedAtMs-d.IssuedAtMs <= DigestCrossing.Milliseconds()
}

// Supersedes reports whether d replaces old of the same peer: a higher
// Seq, or the same Seq issued later. Equal digests do not supersede.
func (d *Digest) Supersedes(old *Digest) bool {
	if d.Seq != old.Seq {
		return d.Seq > old.Seq
	}
	return d.IssuedAtMs > old.IssuedAtMs
}

// Shards returns the shards d is gossiped on, as ProviderShards does for
// a record: its models' families (more GPUs first), then cpu for a CPU
// share.
func (d *Digest) Shards() []Shard {
	count := map[string]int{}
	for _, m := range d.Models {
		count[GPUFamily(m.Model)] += int(m.Total)
	}
	return familyShards(count, d.CPU != nil)
}

// OnShard reports whether d belongs on shard s; a digest topic validator
// rejects digests gossiped on a shard they are not part of.
func (d *Digest) OnShard(s Shard) bool { return slices.Contains(d.Shards(), s) }

// FormerlyOnShard reports whether a digest not on s by today's rule was
// on it by the rule before 2026-12-05, which put every provider running
// wasm on the CPU shard, CPU share or not. A node of an earlier release
// still gossips and serves such digests there: they are dropped, not
// rejected, since their sender followed its release's rule.
func (d *Digest) FormerlyOnShard(s Shard) bool {
	return s == ShardCPU && d.CPU == nil && slices.Contains(d.Runtimes, RuntimeWasm)
}

// Capacity expands d into a capacity record of the same shape as the one
// it summarizes, for code that reads records (`market search`, CouldBid):
// one GPU per counted device with a synthetic UUID ("digest:<model>:<i>"),
// Free set for the free ones, the current floor and no calendar. Fields a
// digest leaves out are empty: no datasets, no image allowlist.
func (d *Digest) Capacity() *Capacity {
	c := &Capacity{
		V: CapacityVersion, Peer: d.Peer, Seq: d.CapSeq, IssuedAtMs: d.IssuedAtMs, ExpiresAtMs: d.ExpiresAtMs,
		Host: d.Host, Region: d.Region, Reachability: d.Reachability, Runtimes: slices.Clone(d.Runtimes),
		Floor:   d.Floor,
		Policy:  Policy{MaxDurationSec: d.MaxDurationSec, Egress: d.Egress},
		CPU:     cloneCPU(d.CPU),
		Version: "digest",
	}
	for _, t := range Tiers {
		if d.Floor.For(t) > 0 {
			c.Policy.Tiers = append(c.Policy.Tiers, t)
		}
	}
	for _, m := range d.Models {
		for i := range m.Total {
			c.GPUs = append(c.GPUs, GPU{
				Index: uint32(len(c.GPUs)), UUID: fmt.Sprintf("digest:%s:%d", m.Model, i),
				Model: m.Model, VRAMMiB: m.VRAMMiB, ComputeCap: m.ComputeCap, Free: i < m.Free,
			})
		}
	}
	return c
}

func cloneCPU(o *CPUOffer) *CPUOffer {
	if o == nil {
		return nil
	}
	c := *o
	return &c
}
