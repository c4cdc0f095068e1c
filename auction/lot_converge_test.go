package auction

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// lotNet simulates a shard's providers choosing their lot counts, each
// from what it hears, with LotsFor's thresholds scaled down by ten (a
// lot of 50 to 100 behaves as one of 500 to 1,000, with more noise). A
// provider publishes its digest on its own lot's digest topic only and
// hears the digest topics it follows: ProviderShardTopics, or, with
// ownOnly, its own lot's alone. A provider in one lot has also synced
// the digests of syncSample random providers (a node's first digest sync
// fills its view from a few peers), and takes a count by JoinLots.
type lotNet struct {
	s       Shard
	ids     []string
	counts  map[string]int
	ownOnly bool
	lotOf   map[string]map[int]int // cached Lot(id, g)
}

const syncSample = 40

func (n *lotNet) lot(id string, g int) int {
	m := n.lotOf[id]
	if m == nil {
		m = map[int]int{}
		n.lotOf[id] = m
	}
	l, ok := m[g]
	if !ok {
		l = Lot(id, g)
		m[g] = l
	}
	return l
}

func (n *lotNet) digestTopic(id string) string {
	g := n.counts[id]
	return LotTopic(n.s.DigestTopic(), n.lot(id, g), g)
}

// round lets every provider count once, in a random order, and returns
// how many changed count.
func (n *lotNet) round(rng *rand.Rand) int {
	on := map[string][]string{}
	for _, id := range n.ids {
		on[n.digestTopic(id)] = append(on[n.digestTopic(id)], id)
	}
	changed := 0
	for _, i := range rng.Perm(len(n.ids)) {
		id := n.ids[i]
		g := n.counts[id]
		follows := []string{n.digestTopic(id)}
		if !n.ownOnly {
			follows = nil
			for _, topic := range ProviderShardTopics(id, n.s, g) {
				if st, err := ParseShardTopic(topic); err == nil && st.Kind == ShardTopicDigest {
					follows = append(follows, topic)
				}
			}
		}
		seen := map[string]bool{}
		for _, topic := range follows {
			for _, p := range on[topic] {
				seen[p] = true
			}
		}
		if g == 1 && !n.ownOnly {
			for range syncSample {
				seen[n.ids[rng.IntN(len(n.ids))]] = true
			}
		}
		delete(seen, id)
		var peers []string
		named := map[int]int{}
		for p := range seen {
			peers = append(peers, p)
			named[n.counts[p]]++
		}
		next := lotsFor(g, ShardSizeFromLot(id, peers, g), LotSplitAt/10, LotJoinBelow/10)
		if !n.ownOnly {
			next = JoinLots(g, next, named)
		}
		if next != g {
			changed++
			old := n.digestTopic(id)
			n.counts[id] = next
			on[old] = remove(on[old], id)
			on[n.digestTopic(id)] = append(on[n.digestTopic(id)], id)
		}
	}
	return changed
}

func remove(ids []string, id string) []string {
	for i, x := range ids {
		if x == id {
			return append(ids[:i], ids[i+1:]...)
		}
	}
	return ids
}

// resize grows or shrinks the shard to size providers (new ones in one
// lot, as a fresh node starts).
func (n *lotNet) resize(size int) {
	for len(n.ids) < size {
		id := fmt.Sprintf("12D3KooWp%05d", len(n.ids)+len(n.counts))
		n.ids = append(n.ids, id)
		n.counts[id] = 1
	}
	n.ids = n.ids[:size]
}

func (n *lotNet) histogram() map[int]int {
	h := map[int]int{}
	for _, id := range n.ids {
		h[n.counts[id]]++
	}
	return h
}

// TestLotCountsConverge: as a shard grows past the thresholds a few
// providers at a time and shrinks again, every provider, counting the
// shard from its lot with the digest topics next to its own
// (ProviderShardTopics, ShardSizeFromLot) and joining a split shard at the
// count its view names (JoinLots), ends at the count LotsFor gives the
// whole shard, and while counts change at most two neighbouring ones are
// in use. A provider that heard only its own lot's digest topic would
// not: the first to move would hear a lot of one and move back, and the
// shard would never split (checked too, so the test shows why the topics
// next to a lot are followed).
func TestLotCountsConverge(t *testing.T) {
	run := func(ownOnly bool, sizes []int) (final map[int]int, settled bool) {
		rng := rand.New(rand.NewPCG(1, 2))
		n := &lotNet{s: GPUShard("h100"), counts: map[string]int{}, ownOnly: ownOnly, lotOf: map[string]map[int]int{}}
		for _, size := range sizes {
			n.resize(size)
			n.round(rng)
			if h := n.histogram(); !ownOnly && !neighbours(h) {
				t.Fatalf("%d providers: counts %v in use at once", size, h)
			}
		}
		for range 8 {
			if n.round(rng) == 0 {
				return n.histogram(), true
			}
		}
		return n.histogram(), false
	}
	var grow, shrink []int
	for s := 80; s <= 600; s += 10 {
		grow = append(grow, s)
	}
	for s := 600; s >= 80; s -= 10 {
		shrink = append(shrink, s)
	}
	for _, c := range []struct {
		name  string
		sizes []int
		lots  int // scaled: 600 providers split at 100 a lot, 80 joined below 25
	}{
		{"grown to 600", grow, 8},
		{"grown to 600, shrunk to 80", append(append([]int{}, grow...), shrink...), 2},
	} {
		final, settled := run(false, c.sizes)
		if size := c.sizes[len(c.sizes)-1]; !settled || final[c.lots] != size {
			t.Errorf("%s: counts %v (settled %v), want all %d in %d lots", c.name, final, settled, size, c.lots)
		}
	}
	if final, _ := run(true, grow); final[8] == 600 {
		t.Errorf("hearing only their own lots, 600 providers still all reached 8 lots: %v", final)
	} else {
		t.Logf("hearing only their own lots, 600 providers end at counts %v", final)
	}
}

// neighbours reports whether the counts in use are one, or two with one
// twice the other.
func neighbours(h map[int]int) bool {
	var gs []int
	for g := range h {
		gs = append(gs, g)
	}
	switch len(gs) {
	case 1:
		return true
	case 2:
		return gs[0] == 2*gs[1] || gs[1] == 2*gs[0]
	}
	return false
}
