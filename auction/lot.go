package auction

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
)

// Lots split a large shard by a hash of the peer ID, so each provider
// hears only its lot's streams (docs/protocol.md §3.6). The replay
// measures what they would cost renters (auction/sim, idlegrid-lots).
// Lot topics are admitted and validated, a digest of version 2 says how
// many lots each of its shards is in, and a provider in a shard of more
// than one lot follows and publishes on its lot's topics instead of the
// shard's (steps 1 and 3 of the migration); renters follow 4 lots of a
// split shard and publish RFQs on 2 of them (lot_follow.go, lot_choose.go).
const lotDomain = "idlegrid-lot/1"

// Lot is the lot, of lots (a power of two), that provider peer (its peer
// ID text) is in: the first 8 bytes, big-endian, of
// SHA-256("idlegrid-lot/1" ‖ 0x00 ‖ peer) modulo lots. Doubling lots
// splits lot i into lots i and i + lots, so a change of the count moves
// no provider between unrelated lots. lots below 2 is one lot, 0.
func Lot(peer string, lots int) int {
	if lots < 2 {
		return 0
	}
	h := sha256.New()
	h.Write([]byte(lotDomain))
	h.Write([]byte{0})
	h.Write([]byte(peer))
	return int(binary.BigEndian.Uint64(h.Sum(nil)[:8]) % uint64(lots))
}

// MaxLots bounds the lots a shard splits into: a lot holds about 500 to
// 1,000 proven providers (docs/protocol.md §3.6), so 1,024 lots are a
// shard of half a million providers or more.
const MaxLots = 1 << 10

// A shard's providers put it in more lots as it grows, so that a lot holds
// about LotJoinBelow×2 to LotSplitAt providers: from G lots to 2G when the
// shard holds LotSplitAt×G, back to G/2 below LotJoinBelow×G. The gap
// between the two keeps a shard near a threshold from flapping.
const (
	LotSplitAt   = 1000
	LotJoinBelow = 250
)

// LotsFor is the number of lots a provider puts its shard in, given the
// count it used before (prev; 0 or 1 for none) and the shard's size as
// its own market view holds it. Providers count from their own views, so
// near a threshold some are in G lots and some in 2G for a while; nobody
// routes by the count (docs/protocol.md §3.6), so that is safe.
func LotsFor(prev, shardSize int) int { return lotsFor(prev, shardSize, LotSplitAt, LotJoinBelow) }

// lotsFor is LotsFor with its thresholds as arguments (tests scale them
// down).
func lotsFor(prev, shardSize, splitAt, joinBelow int) int {
	g := min(max(prev, 1), MaxLots)
	if g&(g-1) != 0 {
		g = 1 // not a count a shard splits into: start over
	}
	for g < MaxLots && shardSize >= splitAt*g {
		g *= 2
	}
	for g > 1 && shardSize < joinBelow*g {
		g /= 2
	}
	return g
}

// JoinLots is the lot count a provider puts its shard in, given the count
// it used before (prev), the one its count of the shard gives (counted:
// LotsFor over ShardSizeFromLot) and how many of the providers in its
// view name each count (named; 1 for those naming none). A provider in one
// lot hears only the shard's own topics and the two lots of 2: joining a
// shard already split further (a fresh node, whose view its first digest
// sync filled), it would count a shard of nobody and stay alone on the
// shard's topic. So in one lot it takes the count most of its view names
// (ties: the smaller) when that is more; in its lot it counts the shard
// from there. Once in lots it counts for itself, so that a shrinking
// shard can join lots again.
func JoinLots(prev, counted int, named map[int]int) int {
	if prev > 1 {
		return counted
	}
	most, best := 1, named[1]
	for g, n := range named {
		if ValidLots(g) && (n > best || n == best && g < most) {
			most, best = g, n
		}
	}
	return max(counted, most)
}

// ValidLots reports whether lots is a count a shard splits into: a power
// of two, 2..MaxLots. One lot is the shard itself and is never named.
func ValidLots(lots int) bool {
	return lots >= 2 && lots <= MaxLots && lots&(lots-1) == 0
}

// lotSuffix is the part of a lot topic after its shard topic.
const lotSuffix = "/lot-"

// LotTopic is shard topic topic's lot lot of lots:
// "<topic>/lot-<lot>-of-<lots>". With lots below 2 it is topic itself: a
// shard of one lot keeps its scheme-2 topics.
func LotTopic(topic string, lot, lots int) string {
	if lots < 2 {
		return topic
	}
	return topic + lotSuffix + strconv.Itoa(lot) + "-of-" + strconv.Itoa(lots)
}

// parseLot parses "<lot>-of-<lots>" in canonical decimal (no sign, no
// leading zero), lots a valid count and lot below it.
func parseLot(s string) (lot, lots int, ok bool) {
	a, b, found := strings.Cut(s, "-of-")
	if !found || !canonicalDecimal(a) || !canonicalDecimal(b) {
		return 0, 0, false
	}
	lot, err1 := strconv.Atoi(a)
	lots, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || !ValidLots(lots) || lot >= lots {
		return 0, 0, false
	}
	return lot, lots, true
}

// canonicalDecimal: 1..4 digits (MaxLots has 4), no leading zero but "0".
func canonicalDecimal(s string) bool {
	return digits(s, 1, 4) && (s == "0" || s[0] != '0')
}
