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
// silent ones left out by the caller). Each count a provider names is a
// set of lots, one lot being the shard's own topic (providers of a shard
// their view keeps whole, or of an earlier release); each lot is an
// auction of its members (Digest.MemberOf). The RFQ goes to the
// LotsPerRFQ lots, among those its renter follows (FollowsLot; all at one
// lot), holding the cheapest proven offers that fit r and whose calendar
// lets them take it at now. A lot without a proven fitting offer is not
// chosen while another has one (fresh keys put in a lot of their choosing
// gain nothing); with none, it is every followed lot with a fitting offer,
// and with none of those the shard's topic. So a shard nobody splits gets
// its own topic, as before lots.
func RFQTopicsOn(r *RFQ, s Shard, offers []ShardOffer, now time.Time) []ShardTopic {
	whole := []ShardTopic{{Kind: ShardTopicRFQ, Shard: s}}
	type lotKey struct{ lot, lots int }
	type lotBest struct {
		lotKey
		price uint64
	}
	cheapest := map[lotKey]uint64{} // proven offers
	fitting := map[lotKey]uint64{}  // any backed offer
	for _, o := range offers {
		lot, g := lotOf(o, s)
		if g == 0 || !FollowsLot(r.Renter, lot, g, LotsFollowed) {
			continue // not on s, or in a lot outside the renter's view
		}
		d := o.Digest
		price, _, ok := DigestFitsOn(r, d, s)
		if !ok || !d.TakesNow(r, now) {
			continue
		}
		k := lotKey{lot, g}
		if cur, ok := fitting[k]; !ok || price < cur {
			fitting[k] = price
		}
		if cur, ok := cheapest[k]; o.Proven && (!ok || price < cur) {
			cheapest[k] = price
		}
	}
	// With no proven fitting offer (a shard split before its providers
	// were proven), every followed lot with a fitting offer: the shard's
	// own topic has none of its providers once they left it (step 3).
	n := LotsPerRFQ
	if len(cheapest) == 0 {
		cheapest, n = fitting, len(fitting)
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
	out := make([]ShardTopic, 0, n)
	for _, b := range best[:min(len(best), n)] {
		st := ShardTopic{Kind: ShardTopicRFQ, Shard: s, Lot: b.lot, Lots: b.lots}
		if b.lots < 2 {
			st.Lot, st.Lots = 0, 0 // the shard's own topic
		}
		out = append(out, st)
	}
	return out
}

// EveryoneTopicsOn are the topics an RFQ asking every provider of shard s
// goes to (auction.EveryoneBids), given the shard's backed providers
// (offers): the shard's own topic while any of them names no lots for s,
// and each lot the renter follows that holds one of them, since a
// provider in a lot follows its lot's RFQ topic only (§3.6, step 3).
func EveryoneTopicsOn(renter string, s Shard, offers []ShardOffer) []ShardTopic {
	var out []ShardTopic
	whole := false
	seen := map[ShardTopic]bool{}
	for _, o := range offers {
		lot, g := lotOf(o, s)
		if g == 1 {
			whole = true
		}
		st := ShardTopic{Kind: ShardTopicRFQ, Shard: s, Lot: lot, Lots: g}
		if g > 1 && FollowsLot(renter, lot, g, LotsFollowed) && !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b ShardTopic) int { return cmp.Or(cmp.Compare(a.Lots, b.Lots), cmp.Compare(a.Lot, b.Lot)) })
	if whole || len(out) == 0 {
		out = append([]ShardTopic{{Kind: ShardTopicRFQ, Shard: s}}, out...)
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

// lotOf is the lot of shard s that offer o's provider names: lots 0 for
// an offer not on s, 1 for one naming no lots for it.
func lotOf(o ShardOffer, s Shard) (lot, lots int) {
	d := o.Digest
	if d == nil || !d.OnShard(s) {
		return 0, 0
	}
	if g := d.LotsOn(s); g > 1 {
		return Lot(d.Peer, g), g
	}
	return 0, 1
}
