package auction

import (
	"cmp"
	"slices"
	"time"
)

// LotsPerRFQ is how many lots of a shard an RFQ goes to (docs/protocol.md
// §3.6): two, so that the cheapest fitting offer's lot and the next
// cheapest's both bid; the replay put the cost to renters of two lots of
// four at −0.04 % to +0.71 % against the whole shard.
const LotsPerRFQ = 2

// RFQTopicsOn are the topics an RFQ r goes to on shard s, given the
// shard's backed providers (offers; Proven as the renter's evidence says,
// silent ones left out by the caller): the shard's own topic while any of
// them names no lots for s (a provider of an earlier release, or one
// whose view puts the shard in one lot, follows only that topic), else the
// LotsPerRFQ lots holding the cheapest proven offers that fit r and whose
// calendar lets them take it at now, among the LotsFollowed lots its
// renter follows (FollowsLot; its view of a split shard, §3.6). A lot is a count and an index, as
// each provider's digest names them: near a threshold a shard's providers
// are in lots of two counts, and each count's lots are auctions of their
// own. A lot without a proven fitting offer is never chosen (fresh keys
// put in a lot of their choosing gain nothing); with none anywhere it is
// the shard's topic.
func RFQTopicsOn(r *RFQ, s Shard, offers []ShardOffer, now time.Time) []ShardTopic {
	whole := []ShardTopic{{Kind: ShardTopicRFQ, Shard: s}}
	type lotKey struct{ lot, lots int }
	type lotBest struct {
		lotKey
		price uint64
	}
	cheapest := map[lotKey]uint64{}
	for _, o := range offers {
		d := o.Digest
		if d == nil || !d.OnShard(s) {
			continue
		}
		g := d.LotsOn(s)
		if g < 2 {
			return whole
		}
		if !o.Proven || !FollowsLot(r.Renter, Lot(d.Peer, g), g, LotsFollowed) {
			continue // unproven, or in a lot outside the renter's view
		}
		price, _, ok := DigestFitsOn(r, d, s)
		if !ok || !d.TakesNow(r, now) {
			continue
		}
		k := lotKey{Lot(d.Peer, g), g}
		if cur, ok := cheapest[k]; !ok || price < cur {
			cheapest[k] = price
		}
	}
	if len(cheapest) == 0 {
		return whole
	}
	best := make([]lotBest, 0, len(cheapest))
	for k, p := range cheapest {
		best = append(best, lotBest{k, p})
	}
	slices.SortFunc(best, func(a, b lotBest) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.lots, b.lots), cmp.Compare(a.lot, b.lot))
	})
	out := make([]ShardTopic, 0, LotsPerRFQ)
	for _, b := range best[:min(len(best), LotsPerRFQ)] {
		out = append(out, ShardTopic{Kind: ShardTopicRFQ, Shard: s, Lot: b.lot, Lots: b.lots})
	}
	return out
}

// ShardRFQTopics are the shards' own RFQ topics, one each.
func ShardRFQTopics(shards []Shard) []ShardTopic {
	out := make([]ShardTopic, len(shards))
	for i, s := range shards {
		out[i] = ShardTopic{Kind: ShardTopicRFQ, Shard: s}
	}
	return out
}
