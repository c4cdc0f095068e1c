package auction

import (
	"cmp"
	"slices"
)

// LotsFollowed is how many lots of a split shard a renter follows
// (docs/protocol.md §3.6): its market view of the shard is their digests
// and attestations, and it publishes its RFQs on the LotsPerRFQ of them
// with the cheapest proven offers. Lots split a shard by a hash of the
// peer ID, so any lot is an even sample of the shard's providers; a
// renter that followed every lot would carry the whole shard's streams
// (about 1.5 MB/s at 100,000 providers) and two topics per lot, which
// the subscription cap between nodes (256) does not hold past about 120
// lots in all. Four lots of 500 to 1,000 providers each are 2,000 to
// 4,000 offers and 8 topics per split shard, whatever its size.
const LotsFollowed = 4

// FollowsLot reports whether a renter (its peer ID text) following k lots
// of lots follows lot: the k lots from the one its own ID hashes to
// (Lot(renter, lots)) onward, wrapping, or every lot when lots is k or
// fewer. Renters' IDs spread them evenly, so each lot is followed (and
// receives RFQs from) about k/lots of them.
func FollowsLot(renter string, lot, lots, k int) bool {
	if lots <= k || k <= 0 {
		return true
	}
	return (lot-Lot(renter, lots)+lots)%lots < k
}

// FollowedLots lists the lots FollowsLot holds, in order from the
// renter's own.
func FollowedLots(renter string, lots, k int) []int {
	if lots < 2 {
		return []int{0}
	}
	n := lots
	if k > 0 && k < lots {
		n = k
	}
	first := Lot(renter, lots)
	if n == lots {
		first = 0
	}
	out := make([]int, n)
	for i := range out {
		out[i] = (first + i) % lots
	}
	return out
}

// MaxLotCountsFollowed bounds the lot counts of one shard a renter
// follows: near a threshold a shard's providers are in lots of two counts
// (G and 2G) for a while, and a third is either a shard moving on from
// both or digests of a few providers naming a count of their own, which a
// renter need not follow.
const MaxLotCountsFollowed = 2

// LotCountsToFollow are the lot counts (above one) that the most of a
// shard's providers name, counts the number of providers naming each,
// at most MaxLotCountsFollowed of them, the more named first (ties: the
// smaller count).
func LotCountsToFollow(counts map[int]int) []int {
	var out []int
	for g, n := range counts {
		if ValidLots(g) && n > 0 {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	return out[:min(len(out), MaxLotCountsFollowed)]
}

// ProviderShardTopics are the topics a provider follows for its shard s
// when its own view puts the shard in lots lots (docs/protocol.md §3.6,
// step 3): the shard's RFQ, digest and attestation topics while it is in
// one lot, else its own lot's; and besides them the digest topics where
// the rest of its lot's providers may be while a shard changes count
// (those still at lots/2, in the lot its own is half of, which is the
// shard's own digest topic at 2 lots; those already at 2×lots, in the two
// halves of its lot), so that it counts its lot whatever count each of
// them is at (ShardSizeFromLot). Those are empty but for a change of
// count: a provider publishes only on its own lot's topics.
func ProviderShardTopics(self string, s Shard, lots int) []string {
	if lots < 2 {
		lots = 1
	}
	lot := Lot(self, lots)
	out := []string{
		LotTopic(s.RFQTopic(), lot, lots),
		LotTopic(s.DigestTopic(), lot, lots),
		LotTopic(s.AttestTopic(), lot, lots),
	}
	if lots >= 2 {
		out = append(out, LotTopic(s.DigestTopic(), Lot(self, lots/2), lots/2))
	}
	if 2*lots <= MaxLots {
		out = append(out, LotTopic(s.DigestTopic(), lot, 2*lots), LotTopic(s.DigestTopic(), lot+lots, 2*lots))
	}
	return out
}

// ShardSizeFromLot is a provider's count of its shard, which LotsFor
// takes: in lots lots it hears only its own lot's digests (and those of
// the lots its own splits from and into: ProviderShardTopics), a fair
// sample since lots are a hash, so the shard is lots × the providers of
// its own lot (peers: the other providers of the shard its view holds,
// whatever count each names; itself counted too), or the providers its
// view holds, whichever is more.
func ShardSizeFromLot(self string, peers []string, lots int) int {
	if lots < 2 {
		return len(peers) + 1
	}
	mine, inLot := Lot(self, lots), 1
	for _, p := range peers {
		if Lot(p, lots) == mine {
			inLot++
		}
	}
	return max(len(peers)+1, lots*inLot)
}
