package auction

import (
	"fmt"
	"maps"
	"slices"
)

// Version 2 of the capacity digest says how many lots each of its shards
// is split into (docs/protocol.md §3.6): a lot topic's validator checks
// that a digest there is its lot's, and renters will follow the lot topics
// the digests they hold name. A new field goes in a new version, read by
// one release and written by the next (§5.1): the release of 2026-12-06
// read version 2, this one writes it for a digest that names lots, and
// version 1 for every other, so small networks stay readable by nodes
// from before lots.
const DigestVersion = 2

// LotsOn is the number of lots d's provider puts shard s in: 1 unless
// its digest (version 2) names more.
func (d *Digest) LotsOn(s Shard) int {
	if g := d.Lots[s]; g >= 2 {
		return int(g)
	}
	return 1
}

// OnTopic reports whether d belongs on the digest or attestation topic
// st: on a shard it is on, and on a lot topic only in the lot its
// provider is in by the count its digest names for that shard.
func (d *Digest) OnTopic(st ShardTopic) bool {
	if !d.OnShard(st.Shard) {
		return false
	}
	return st.Lots < 2 || d.LotsOn(st.Shard) == st.Lots && st.Holds(d.Peer)
}

// MemberOf reports whether d's provider follows the RFQ topic of st's
// shard or lot, so that an RFQ there is its auction: the shard's own topic
// when it names no lots for the shard, else its lot's at the count it
// names (docs/protocol.md §3.6, step 3). Bid selection (a provider's
// ShouldBid, the renter's expected bidders) runs over a topic's members.
// Unlike OnTopic, which admits a digest on the shard's own topics whatever
// count it names (providers of an earlier release published there too).
func (d *Digest) MemberOf(st ShardTopic) bool {
	if !d.OnShard(st.Shard) || d.LotsOn(st.Shard) != max(st.Lots, 1) {
		return false
	}
	return st.Lots < 2 || st.Holds(d.Peer)
}

// validateLots checks the version and the lots: none in version 1; in
// version 2 each names a shard the digest is on, with a count a shard
// splits into (one lot is the shard itself and is written as absent).
func (d *Digest) validateLots(p *problems) {
	if d.V != DigestVersionNoLots && d.V != DigestVersion {
		p.Addf("v", "version %d, want %d or %d", d.V, DigestVersionNoLots, DigestVersion)
		return
	}
	if d.V == DigestVersionNoLots {
		if len(d.Lots) != 0 {
			p.Addf("lots", "version %d has no lots", DigestVersionNoLots)
		}
		return
	}
	shards := d.Shards()
	for _, s := range slices.Sorted(maps.Keys(d.Lots)) {
		if !slices.Contains(shards, s) {
			p.Addf("lots", "%q is not a shard of the digest (%v)", s, shards)
		}
		if !ValidLots(int(d.Lots[s])) {
			p.Addf(fmt.Sprintf("lots[%s]", s), "%d is not a power of two in 2..%d", d.Lots[s], MaxLots)
		}
	}
}
