package trust

import "github.com/idlegrid/idlegrid/auction"

// LotCounts are the lot counts that the backed providers of shard s name
// in their digests (1: none), with how many name each: a renter follows
// the lots of the counts above one most of them name
// (auction.LotCountsToFollow, docs/protocol.md §3.6), and a provider in
// one lot joins the count most name (auction.JoinLots). Only backed
// providers count, so fresh keys naming a count of their own cannot pull
// a node onto its topics.
func (t *Trust) LotCounts(s auction.Shard) map[int]int {
	now := t.now()
	out := map[int]int{}
	for _, d := range t.digests.Digests(s, now) {
		if d.Peer == t.selfStr || !t.evidence(d.Peer, false).Backed(now) {
			continue
		}
		out[d.LotsOn(s)]++
	}
	return out
}

// FollowedShards are the shards whose digests this node has learnt of,
// the shards a renter follows.
func (t *Trust) FollowedShards() []auction.Shard {
	t.shardsMu.Lock()
	defer t.shardsMu.Unlock()
	out := make([]auction.Shard, 0, len(t.shards))
	for s := range t.shards {
		out = append(out, s)
	}
	return out
}

// lotPair is a shard and a lot count a backed provider named for it.
type lotPair struct {
	s    auction.Shard
	lots int
}

// noteLots tells onLots when backed provider d's digest names a lot count
// of a shard that no backed provider named before: at most one call per
// shard and count (ten counts a shard splits into).
func (t *Trust) noteLots(d *auction.Digest) {
	if t.onLots == nil || d.Peer == t.selfStr {
		return
	}
	fresh := false
	t.shardsMu.Lock()
	for _, s := range d.Shards() {
		if g := d.LotsOn(s); g > 1 && !t.lotPairs[lotPair{s, g}] {
			t.lotPairs[lotPair{s, g}] = true
			fresh = true
		}
	}
	t.shardsMu.Unlock()
	if fresh {
		t.onLots()
	}
}

// heardOn reports whether a connected peer follows shard s's RFQ topic or
// that of a lot of it this renter follows: once split, a shard's providers
// follow their lots' topics only (docs/protocol.md §3.6, step 3).
func (t *Trust) heardOn(s auction.Shard) bool {
	if len(t.p2p.ListTopicPeers(s.RFQTopic())) > 0 {
		return true
	}
	for _, g := range auction.LotCountsToFollow(t.LotCounts(s)) {
		for _, lot := range auction.FollowedLots(t.selfStr, g, auction.LotsFollowed) {
			if len(t.p2p.ListTopicPeers(auction.LotTopic(s.RFQTopic(), lot, g))) > 0 {
				return true
			}
		}
	}
	return false
}
