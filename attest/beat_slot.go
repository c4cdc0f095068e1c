package attest

import (
	"hash/fnv"
	"time"
)

// DefaultBeatEvery is how often a provider gossips a heartbeat (a
// telemetry entry) on its shards' attestation topics by default: one per
// slot of this length. Its chain still gets an entry every telemetry
// window; the rest are served to its renters with their leases. A shard
// of n providers carries n/600 heartbeats a second, where gossiping every
// one-minute window carried n/60.
const DefaultBeatEvery = 10 * time.Minute

// BeatSlot is the slot of a heartbeat dated atMs by provider, for slots
// of length every: a provider gossips at most one heartbeat per slot, the
// first entry it closes in the slot, and a node admits at most one per
// provider and slot. Each provider's slots start at a phase drawn from its
// ID, so a shard's heartbeats spread over the slot instead of all coming
// at its start. every is a network-wide setting, agreed like the gossip
// parameters (p2p.telemetry_gossip_every); every <= 0 puts each
// millisecond in its own slot.
func BeatSlot(provider string, atMs int64, every time.Duration) int64 {
	ms := every.Milliseconds()
	if ms <= 0 {
		return atMs
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(provider))
	phase := int64(h.Sum64() % uint64(ms))
	t := atMs + phase
	slot := t / ms
	if t < 0 && t%ms != 0 {
		slot-- // floor, for dates before 1970 a clock may claim
	}
	return slot
}

// BeatSlotsSpanned counts the slots from the one of firstMs to the one of
// lastMs, both included: the heartbeats an observer should have seen of a
// provider it heard at firstMs and lastMs, had the provider been up all
// along.
func BeatSlotsSpanned(provider string, firstMs, lastMs int64, every time.Duration) int {
	if lastMs < firstMs {
		return 0
	}
	return int(BeatSlot(provider, lastMs, every)-BeatSlot(provider, firstMs, every)) + 1
}
