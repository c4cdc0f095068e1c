package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// Phantoms (Config.Phantoms) in the replay: providers that gossip digests
// cheaper than any real provider of their shard and never bid. Keys are
// free and "proven" is evidence strangers make for each other (a made-up
// provider with a capacity record and a made-up renter co-signing a
// summary, docs/protocol.md §6.5), so phantoms take the cheapest places
// of the always-bid prefix, and the cheapest honest providers, pushed
// out of it, bid only by lot. The node silences a provider of the
// prefix that misses auction.SilentAfter auctions in a row, for
// auction.SilentFor after its last miss (the renter's own auctions,
// node/trust/expect.go, and each provider's prefix watch,
// node/trust/prefix_watch.go). Every node of the replay sees the same
// RFQs and summaries, so one silence state stands for all of them.
// Config.NoPrefixWatch leaves phantoms in every view for good.

// phantomIDBase numbers phantoms' peer IDs apart from the providers'.
const phantomIDBase = 1 << 24

// phantom is one phantom provider: its digest, re-issued like a real
// one's, and its misses.
type phantom struct {
	id    string
	cap   auction.Capacity
	d     *auction.Digest
	at    int64
	seq   uint64
	ev    auction.ProviderEvidence
	shard auction.Shard
}

// newPhantoms makes n phantoms on each of v's shards: the capacity of the
// shard's provider with the most GPUs (so they fit the most RFQs), under
// a phantom's ID, at half the shard's lowest floor of each tier.
func newPhantoms(w *World, v *bidView, n int) (map[auction.Shard][]*phantom, error) {
	out := map[auction.Shard][]*phantom{}
	k := 0
	for _, s := range sortedShards(v.shards) {
		idx := v.shards[s]
		base := w.provs[idx[0]]
		floor := base.cap.Floor
		for _, i := range idx[1:] {
			p := w.provs[i]
			if len(p.cap.GPUs) > len(base.cap.GPUs) {
				base = p
			}
			floor.Gold = min(floor.Gold, p.cap.Floor.Gold)
			floor.Silver = min(floor.Silver, p.cap.Floor.Silver)
			floor.Bronze = min(floor.Bronze, p.cap.Floor.Bronze)
		}
		for range n {
			id, err := simPeerID(w.seed, phantomIDBase+k)
			if err != nil {
				return nil, err
			}
			k++
			c := *base.cap
			c.Peer = id
			c.GPUs = append([]auction.GPU(nil), base.cap.GPUs...)
			for g := range c.GPUs {
				c.GPUs[g].UUID = fmt.Sprintf("GPU-phantom-%d-%d", k, g)
				c.GPUs[g].Free = true
			}
			c.Floor = auction.FloorPrice{Gold: floor.Gold / 2, Silver: floor.Silver / 2, Bronze: floor.Bronze / 2}
			out[s] = append(out[s], &phantom{id: id, cap: c, shard: s})
		}
	}
	return out, nil
}

// digest is the phantom's current digest, re-issued every digestRefresh.
func (ph *phantom) digest(w *World) (*auction.Digest, error) {
	if ph.d != nil && w.now-ph.at < digestRefresh {
		return ph.d, nil
	}
	ph.seq++
	d, err := issueDigest(ph.cap, ph.seq, w.nowTime())
	if err != nil {
		return nil, err
	}
	ph.d, ph.at = d, w.now
	return d, nil
}

// inView reports whether the phantom is in the nodes' views at now: not
// silent, unless nothing silences it.
func (ph *phantom) inView(now time.Time, watch bool) bool {
	return !watch || !ph.ev.Silent(now)
}

// missed notes an auction that expected the phantom's bid.
func (ph *phantom) missed(now time.Time) {
	ph.ev.Missed++
	ph.ev.LastMiss = now
}

// sortedShards returns the shards of m in order, so phantoms are numbered
// the same in every run of a seed.
func sortedShards(m map[auction.Shard][]int) []auction.Shard {
	return slices.Sorted(maps.Keys(m))
}
