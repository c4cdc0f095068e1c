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
