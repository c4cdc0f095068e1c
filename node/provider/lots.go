package provider

import (
	"maps"
	"sync"

	"github.com/idlegrid/idlegrid/auction"
)

// lotCounts decides how many lots this provider puts each of its shards in
// (auction.LotsFor, from the shard's size as its own market view holds
// it: auction.ShardSizeFromLot, since once split it hears its own lot)
// and where its shard messages go: in a shard of more than one lot, to its
// lot's topic only (docs/protocol.md §3.6, step 3: renters follow lots).
type lotCounts struct {
	self string
	// rule is auction.LotsFor (Deps.LotsFor replaces it in tests, where
	// no shard reaches a thousand providers).
	rule func(prev, shardSize int) int
	// size is a shard's providers as the market view holds them, this
	// one included, for a count of lots (marketView.shardSize).
	size func(s auction.Shard, lots int) int
	// named counts the backed providers of a shard by the lot count each
	// names (Deps.LotsNamed; nil: none), which a provider in one lot joins
	// (auction.JoinLots): a fresh node has checked their records after its
	// first digest sync, long before it has seen any of them bid.
	named func(s auction.Shard) map[int]int
	// follow joins a shard's lot topics for a new count, leaving those of
	// the count before (the node's followLot); nil joins nothing.
	follow func(s auction.Shard, lots int)

	mu sync.Mutex
	by map[auction.Shard]int // counts above one
}

func newLotCounts(self string, rule func(prev, shardSize int) int, size func(auction.Shard, int) int, follow func(auction.Shard, int)) *lotCounts {
	if rule == nil {
		rule = auction.LotsFor
	}
	return &lotCounts{self: self, rule: rule, size: size, follow: follow, by: map[auction.Shard]int{}}
}

// update counts the lots of shards (the provider's now; a shard it left
// is forgotten, and its lot topics left), tells follow of each count that
// changed, and returns the counts above one, for the digest.
func (l *lotCounts) update(shards []auction.Shard) map[auction.Shard]int {
	type change struct {
		s    auction.Shard
		lots int
	}
	var changes []change
	l.mu.Lock()
	next := map[auction.Shard]int{}
	for _, s := range shards {
		g := l.rule(l.by[s], l.size(s, l.by[s]))
		if l.named != nil {
			g = auction.JoinLots(l.by[s], g, l.named(s))
		}
		if auction.ValidLots(g) {
			next[s] = g
		}
	}
	for s, g := range next {
		if l.by[s] != g {
			changes = append(changes, change{s, g})
		}
	}
	for s := range l.by {
		if _, ok := next[s]; !ok {
			changes = append(changes, change{s, 1})
		}
	}
	l.by = next
	out := maps.Clone(next)
	l.mu.Unlock()
	if l.follow != nil {
		for _, c := range changes {
			l.follow(c.s, c.lots)
		}
	}
	return out
}

// topics are where a message for shard s's topic goes: the topic, or
// this provider's lot's topic when s is in more than one lot.
func (l *lotCounts) topics(s auction.Shard, topic string) []string {
	l.mu.Lock()
	g := l.by[s]
	l.mu.Unlock()
	return []string{auction.LotTopic(topic, auction.Lot(l.self, g), g)}
}

// shardTopics is where a message for shard s's topic goes by topics (a
// component's lotCounts.topics; nil: the topic only).
func shardTopics(topics func(auction.Shard, string) []string, s auction.Shard, topic string) []string {
	if topics == nil {
		return []string{topic}
	}
	return topics(s, topic)
}
