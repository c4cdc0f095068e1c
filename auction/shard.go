package auction

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sharded gossip (docs/protocol.md §3.5). RFQs and capacity digests go to
// topics by what they need, so an H100 job costs a T4 host nothing: one
// shard per GPU family plus one CPU-only shard. The topic names are
// protocol; ShardSchemeVersion is the "2" in idlegrid/rfq/2/....
const (
	ShardSchemeVersion = 2
	// RFQShardPrefix and DigestShardPrefix start every shard topic; the
	// rest is the shard: "gpu/<family>" or "cpu".
	RFQShardPrefix    = "idlegrid/rfq/2/"
	DigestShardPrefix = "idlegrid/digest/1/"
	// AttestShardPrefix starts a shard's attestation topic: its
	// providers' heartbeats (telemetry chain entries) and the award
	// summaries and receipts of its leases. Only the nodes of a shard
	// carry them; on one network-wide topic every node carried every
	// provider's heartbeat and every lease's summary and receipt.
	AttestShardPrefix = "idlegrid/attest/1/"
	// ShardCPU is the shard of CPU-only (wasm, 0 GPU) jobs.
	ShardCPU Shard = "cpu"
	// MaxShardsPerNode bounds the GPU shards a provider joins; with the
	// CPU shard and at most 6 topics per shard (ProviderShardTopics: an
	// RFQ, a digest and an attestation topic, and the digest topics of the
	// lots next to its own) a provider follows at most
	// MaxShardTopicsPerNode shard topics at a time.
	MaxShardsPerNode      = 8
	MaxShardTopicsPerNode = 6 * (MaxShardsPerNode + 1)
	// MaxShardsPerRFQ bounds the shards one RFQ is published on.
	MaxShardsPerRFQ = 16

	shardGPUPrefix = "gpu/"
)

// ErrBadShardTopic: a topic name is not a shard topic of this scheme.
var ErrBadShardTopic = errors.New("not a shard topic")

// Shard names one slice of the market: "gpu/<family>" or "cpu".
type Shard string

// GPUShard is the shard of a GPU family (see GPUFamily).
func GPUShard(family string) Shard { return Shard(shardGPUPrefix + family) }

// RFQTopic is the gossip topic carrying the shard's RFQs.
func (s Shard) RFQTopic() string { return RFQShardPrefix + string(s) }

// DigestTopic is the gossip topic carrying the shard's capacity digests.
func (s Shard) DigestTopic() string { return DigestShardPrefix + string(s) }

// AttestTopic is the gossip topic carrying the heartbeats of the shard's
// providers and the award summaries and receipts of its leases.
func (s Shard) AttestTopic() string { return AttestShardPrefix + string(s) }

// Family returns the GPU family of a GPU shard, "" for the CPU shard.
func (s Shard) Family() string {
	f, _ := strings.CutPrefix(string(s), shardGPUPrefix)
	if f == string(s) {
		return ""
	}
	return f
}

// ModelShard is the shard of a lease's model: the CPU shard for a
// CPU-only lease (CPUModel), else the model's family shard; false for a
// slug that names no valid shard.
func ModelShard(model string) (Shard, bool) {
	if model == CPUModel {
		return ShardCPU, true
	}
	s := GPUShard(GPUFamily(model))
	return s, IsModelSlug(model) && s.Valid()
}

// Valid reports whether s is the CPU shard or a GPU shard of a family.
func (s Shard) Valid() bool {
	if s == ShardCPU {
		return true
	}
	f := s.Family()
	return f != "" && IsModelSlug(f) && GPUFamily(f) == f
}

// GPUFamily is the family of a GPU model slug: the slug without its memory
// segment ("-<n>gb", which node/gpu.ModelSlug always appends), so
// "h100-80gb" and "h100-94gb" are family "h100", "h100-nvl-94gb" is
// "h100-nvl" and "rtx-4090-24gb" is "rtx-4090". Cards of one family are
// one market: a renter who asks for "h100" wants both memory sizes, and
// the two do not split the H100 providers into shards too thin to fill a
// job. A slug without a memory segment is its own family.
func GPUFamily(slug string) string {
	i := strings.LastIndexByte(slug, '-')
	if i <= 0 {
		return slug
	}
	last := slug[i+1:]
	num, ok := strings.CutSuffix(last, "gb")
	if !ok || !digits(num, 1, 6) {
		return slug
	}
	return slug[:i]
}

// ShardTopicKind says which stream of a shard a topic carries.
type ShardTopicKind int

// Shard topic kinds.
const (
	ShardTopicRFQ ShardTopicKind = iota + 1
	ShardTopicDigest
	ShardTopicAttest
)

// ShardTopic is a parsed shard topic name.
type ShardTopic struct {
	Kind  ShardTopicKind
	Shard Shard
	// Lot of Lots, for a lot topic (§3.6); Lots is 0 for the shard's own
	// topic.
	Lot, Lots int
}

// Holds reports whether provider (its peer ID text) belongs on the
// topic: on a shard's own topic any provider of the shard, on a lot topic
// only those of the lot.
func (st ShardTopic) Holds(provider string) bool {
	return st.Lots < 2 || Lot(provider, st.Lots) == st.Lot
}

// Topic is the topic's name.
func (st ShardTopic) Topic() string {
	var t string
	switch st.Kind {
	case ShardTopicRFQ:
		t = st.Shard.RFQTopic()
	case ShardTopicDigest:
		t = st.Shard.DigestTopic()
	default:
		t = st.Shard.AttestTopic()
	}
	return LotTopic(t, st.Lot, st.Lots)
}

// ParseShardTopic parses "idlegrid/rfq/2/<shard>",
// "idlegrid/digest/1/<shard>" or "idlegrid/attest/1/<shard>" (not the
// network-wide "idlegrid/attest/1"), each optionally followed by
// "/lot-<lot>-of-<lots>" (a lot topic, §3.6). It accepts only the
// canonical name of a valid shard and lot, so a topic allowlist or
// subscription filter can call it to admit exactly the topics of this
// scheme and no aliases.
func ParseShardTopic(topic string) (ShardTopic, error) {
	var st ShardTopic
	var rest string
	switch {
	case strings.HasPrefix(topic, RFQShardPrefix):
		st.Kind, rest = ShardTopicRFQ, topic[len(RFQShardPrefix):]
	case strings.HasPrefix(topic, DigestShardPrefix):
		st.Kind, rest = ShardTopicDigest, topic[len(DigestShardPrefix):]
	case strings.HasPrefix(topic, AttestShardPrefix):
		st.Kind, rest = ShardTopicAttest, topic[len(AttestShardPrefix):]
	default:
		return ShardTopic{}, fmt.Errorf("auction.ParseShardTopic: %w: %q has no shard prefix", ErrBadShardTopic, topic)
	}
	// A shard has at most one slash (gpu/<family>), so a lot suffix is
	// the last segment after a valid shard; "gpu/lot-1-of-2" is the shard
	// of a family named "lot-1-of-2".
	if i := strings.LastIndex(rest, lotSuffix); i > 0 && Shard(rest[:i]).Valid() {
		lot, lots, ok := parseLot(rest[i+len(lotSuffix):])
		if !ok {
			return ShardTopic{}, fmt.Errorf("auction.ParseShardTopic: %w: %q is not lot-<lot>-of-<lots> with lots a power of two up to %d", ErrBadShardTopic, rest[i+1:], MaxLots)
		}
		rest, st.Lot, st.Lots = rest[:i], lot, lots
	}
	st.Shard = Shard(rest)
	if !st.Shard.Valid() {
		return ShardTopic{}, fmt.Errorf("auction.ParseShardTopic: %w: %q is not cpu or gpu/<family>", ErrBadShardTopic, rest)
	}
	return st, nil
}

// ProviderShards returns the shards a provider with capacity c serves:
// the family of every GPU model it has (families with more GPUs first,
// then by name; at most MaxShardsPerNode), then the CPU shard if it
// offers a CPU share (the only thing a CPU-only RFQ can lease). A
// provider joins each shard's RFQ and digest topics. It counts all GPUs,
// free or not: a busy GPU is free again soon, and re-joining topics on
// every lease would churn the mesh.
func ProviderShards(c *Capacity) []Shard {
	count := map[string]int{}
	for _, g := range c.GPUs {
		count[GPUFamily(g.Model)]++
	}
	return familyShards(count, c.CPU != nil)
}

// BeatShards are the shards whose attestation topics carry a provider's
// heartbeats, of the shards it serves: its GPU shards, or the CPU shard
// for a provider without GPUs. A GPU provider may offer a CPU share too
// (provider.cpu_beside_gpus); its heartbeats matter to the renters of
// its GPU families, and on the CPU shard as well they would reach every
// such provider.
func BeatShards(served []Shard) []Shard {
	out := make([]Shard, 0, len(served))
	for _, s := range served {
		if s != ShardCPU {
			out = append(out, s)
		}
	}
	if len(out) == 0 && slices.Contains(served, ShardCPU) {
		out = append(out, ShardCPU)
	}
	return out
}

// familyShards orders families by count (desc), then name, truncates to
// MaxShardsPerNode and appends the CPU shard when cpu is set.
func familyShards(count map[string]int, cpu bool) []Shard {
	fams := make([]string, 0, len(count))
	for f := range count {
		fams = append(fams, f)
	}
	slices.SortFunc(fams, func(a, b string) int {
		return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b))
	})
	out := make([]Shard, 0, min(len(fams), MaxShardsPerNode)+1)
	for _, f := range fams[:min(len(fams), MaxShardsPerNode)] {
		if s := GPUShard(f); s.Valid() {
			out = append(out, s)
		}
	}
	if cpu {
		out = append(out, ShardCPU)
	}
	return out
}

// RFQShards returns the shards r is published on, at most MaxShardsPerRFQ:
//
//   - a CPU-only RFQ (0 GPUs) goes to the CPU shard only;
//   - each model pattern goes to its own family's shard ("h100-80gb" and
//     "h100" to gpu/h100), and to every family in known that extends the
//     pattern ("h100" also to gpu/h100-nvl, "rtx" to gpu/rtx-4090);
//   - an RFQ with no model constraint goes to every shard in known: the
//     caller passes the GPU shards that can serve it, best first (the
//     renter's DigestBook.ShardsFor does), because no fixed list of
//     families exists.
//
// known is in the caller's priority order; order is kept and duplicates
// dropped. An empty result means the renter knows no shard that could
// serve r: it should sync its market view first (or fall back to the
// unsharded idlegrid/rfq/1).
func RFQShards(r *RFQ, known []Shard) []Shard {
	if r.Resources.GPUs == 0 {
		return []Shard{ShardCPU}
	}
	var out []Shard
	add := func(s Shard) {
		if len(out) < MaxShardsPerRFQ && s.Valid() && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(r.Resources.Models) == 0 {
		for _, s := range known {
			if s != ShardCPU {
				add(s)
			}
		}
		return out
	}
	for _, p := range r.Resources.Models {
		add(GPUShard(GPUFamily(p)))
	}
	for _, p := range r.Resources.Models {
		for _, s := range known {
			if f := s.Family(); f != "" && ModelMatches(p, f) {
				add(s)
			}
		}
	}
	return out
}

// RFQOnShard reports whether r belongs on shard s: a validator rejects an
// RFQ gossiped on a shard it could not have been routed to, so a renter
// cannot spam a shard whose providers could never serve it.
func RFQOnShard(r *RFQ, s Shard) bool {
	if s == ShardCPU {
		return r.Resources.GPUs == 0
	}
	f := s.Family()
	if f == "" || r.Resources.GPUs == 0 {
		return false
	}
	if len(r.Resources.Models) == 0 {
		return true
	}
	for _, p := range r.Resources.Models {
		if GPUFamily(p) == f || ModelMatches(p, f) {
			return true
		}
	}
	return false
}
