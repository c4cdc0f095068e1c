package reputation

import (
	"cmp"
	"math"
	"time"
)

// A node need not keep every receipt it is gossiped. One renter's receipts
// about one provider diminish ([Config.GossipDiminish]): its k-th heaviest
// counts GossipDiminish^k of its weight. And two receipts keep the ratio
// of their weights as they age, since both decay by the same factor. So
// the heaviest [Config.GossipKeep] of a (provider, renter) pair, chosen
// by [Config.ReceiptRank] at any time, stay the heaviest at every later
// time, and the rest never count for more than [GossipKeepLoss] of the
// pair's weight. Keeping only those bounds what a node holds per pair
// without changing a score by more than that share.

// GossipKeepLoss bounds the share of one pair's gossip weight that the
// receipts past [Config.GossipKeep] can carry.
const GossipKeepLoss = 1.0 / (1 << 15)

// maxGossipKeep caps GossipKeep for a GossipDiminish close to 1.
const maxGossipKeep = 64

// GossipKeep is how many receipts of one renter about one provider count
// for more than GossipKeepLoss of the pair's weight together: the least n
// with GossipDiminish^n / (1 - GossipDiminish) <= GossipKeepLoss (16 with
// the default 0.5), at least 1 and at most 64. The k-th heaviest receipt
// weighs at most the heaviest's weight, so those past n weigh at most
// GossipDiminish^n / (1 - GossipDiminish) of it together.
func (c Config) GossipKeep() int {
	d := c.GossipDiminish
	if !(d > 0) {
		return 1
	}
	n := math.Ceil(math.Log(GossipKeepLoss*(1-d)) / math.Log(d))
	return int(min(max(n, 1), maxGossipKeep))
}

// ReceiptRank orders receipts by their weight before diminishing, at any
// time after both: a receipt of higher rank weighs more, now and later. It
// is the weight's base-2 logarithm less a term of the time alone
// (log2 of decay is -age/HalfLife). A receipt that counts for nothing (a
// neutral state, no GPU-hours) ranks -Inf.
func (c Config) ReceiptRank(r Receipt) float64 {
	if c.effect(r.State) == EffectNeutral || !(r.GPUHours > 0) {
		return math.Inf(-1)
	}
	h := min(r.GPUHours, c.MaxLeaseGPUHours)
	at := float64(r.At.Round(0).UnixMilli()) / float64(c.HalfLife/time.Millisecond)
	return at + math.Log2(volume(h))
}

// HeavierFirst orders one pair's receipts as the fold ranks them for
// diminishing: by weight, heaviest first (ReceiptRank), equal weights by
// lease ID. Receipts carry millisecond times (attest.Receipt's at_ms), at
// which equal ranks are equal weights.
func (c Config) HeavierFirst(a, b Receipt) int {
	return cmp.Or(cmp.Compare(c.ReceiptRank(b), c.ReceiptRank(a)), cmp.Compare(a.Lease, b.Lease))
}
