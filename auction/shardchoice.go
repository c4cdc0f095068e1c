package auction

import (
	"cmp"
	"slices"
	"time"
)

// ShardOffer is one provider's digest as a renter's shard choice sees it:
// only digests the renter holds evidence of (backed, see evidence.go) are
// offered, and Proven marks those also seen to bid.
type ShardOffer struct {
	Digest *Digest
	Proven bool
}

// Limits of the shard choice: a few shards with no proven provider (a
// new family, or a family only fresh keys claim) and a few with no
// subscriber at all, so an RFQ is never split over shards nobody serves.
const (
	MaxUnprovenShards = 2
	MaxUnheardShards  = 2
)

// ChooseShards returns the shards a renter publishes r on (RFQShards), with
// the GPU shards of the offers that fit r (DigestFits) and whose calendar
// lets them take it at now (Digest.TakesNow; a shard of hosts about to
// close would draw no bid, and take its part of want_bids) as the known
// shards:
//
//   - shards with a proven provider first, by their cheapest proven offer;
//   - then at most MaxUnprovenShards shards only unproven providers back,
//     known GPU families (KnownGPUFamilies) before others, then by their
//     cheapest offer;
//   - ties by name; and of all these, at most MaxUnheardShards for which
//     heard reports no subscriber (heard nil: all heard).
//
// So fresh keys claiming cheap GPUs of made-up families cannot pull an RFQ
// off the shards where providers were seen to bid, nor split it over
// topics nobody listens to.
func ChooseShards(r *RFQ, offers []ShardOffer, heard func(Shard) bool, now time.Time) []Shard {
	type rank struct {
		proven   bool
		known    bool
		price    uint64
		hasPrice bool
	}
	ranks := map[Shard]*rank{}
	for _, o := range offers {
		price, _, ok := DigestFits(r, o.Digest)
		if !ok || !o.Digest.TakesNow(r, now) {
			continue
		}
		for _, s := range o.Digest.Shards() {
			if s == ShardCPU {
				continue
			}
			rk := ranks[s]
			if rk == nil {
				rk = &rank{known: slices.Contains(KnownGPUFamilies, s.Family())}
				ranks[s] = rk
			}
			switch {
			case o.Proven && !rk.proven:
				rk.proven, rk.price, rk.hasPrice = true, price, true
			case o.Proven == rk.proven && (!rk.hasPrice || price < rk.price):
				rk.price, rk.hasPrice = price, true
			}
		}
	}
	shards := make([]Shard, 0, len(ranks))
	for s := range ranks {
		shards = append(shards, s)
	}
	slices.SortFunc(shards, func(x, y Shard) int {
		a, b := ranks[x], ranks[y]
		if a.proven != b.proven {
			return -cmpBool(a.proven, b.proven)
		}
		if !a.proven && a.known != b.known {
			return -cmpBool(a.known, b.known)
		}
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(x, y))
	})
	known := make([]Shard, 0, len(shards))
	unproven, unheard := 0, 0
	for _, s := range shards {
		isUnproven, isUnheard := !ranks[s].proven, heard != nil && !heard(s)
		if isUnproven && unproven == MaxUnprovenShards || isUnheard && unheard == MaxUnheardShards {
			continue
		}
		if isUnproven {
			unproven++
		}
		if isUnheard {
			unheard++
		}
		known = append(known, s)
	}
	return RFQShards(r, known)
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
