package node

import (
	"context"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// A renter follows, of each shard split into lots, the
// auction.LotsFollowed lots from the one its own peer ID hashes to
// (auction.FollowedLots), at the counts most of the shard's backed
// providers name (auction.LotCountsToFollow; two near a threshold): their
// digest and attestation topics (docs/protocol.md §3.6). Its RFQs go only
// to lots it follows (auction.RFQTopicsOn). A split shard's providers
// follow their lots' topics only (step 3), so these lots are the renter's
// view of the shard; it still follows the shard's own topics, where the
// providers of a shard in one lot are.
type renterLots struct {
	mu sync.Mutex
	by map[renterLot]context.CancelFunc
	// look wakes the loop when trust sees a count named for the first
	// time (trust.Deps.OnLots), so a renter need not wait for its next
	// look at the counts.
	look chan struct{}
}

type renterLot struct {
	s    auction.Shard
	lots int
}

// renterLotsEvery is how often a renter looks again at the counts its
// shards' providers name: a shard's providers move to another count
// one by one, as each digest they send counts the shard afresh.
const renterLotsEvery = 30 * time.Second

// lookAtLots is trust's OnLots: it never blocks a validator.
func (n *Node) lookAtLots() {
	select {
	case n.rLots.look <- struct{}{}:
	default:
	}
}

// followRenterLots keeps the renter on its lots until ctx ends.
func (n *Node) followRenterLots(ctx context.Context) {
	t := time.NewTicker(renterLotsEvery)
	defer t.Stop()
	for {
		n.reconcileRenterLots(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.rLots.look:
		}
	}
}

// reconcileRenterLots joins the lots the renter should follow now and
// leaves those it should not.
func (n *Node) reconcileRenterLots(ctx context.Context) {
	want := map[renterLot]bool{}
	for _, s := range n.trust.FollowedShards() {
		for _, g := range auction.LotCountsToFollow(n.trust.LotCounts(s)) {
			want[renterLot{s, g}] = true
		}
	}
	self := n.p2p.ID().String()
	n.rLots.mu.Lock()
	defer n.rLots.mu.Unlock()
	if n.rLots.by == nil {
		n.rLots.by = map[renterLot]context.CancelFunc{}
	}
	for k, cancel := range n.rLots.by {
		if !want[k] {
			cancel()
			delete(n.rLots.by, k)
			n.log.Info("left a shard's lots", "shard", k.s, "lots", k.lots)
		}
	}
	for k := range want {
		if _, ok := n.rLots.by[k]; ok || ctx.Err() != nil {
			continue
		}
		lctx, cancel := context.WithCancel(ctx)
		followed := auction.FollowedLots(self, k.lots, auction.LotsFollowed)
		for _, lot := range followed {
			for _, shardTopic := range []string{k.s.DigestTopic(), k.s.AttestTopic()} {
				topic := auction.LotTopic(shardTopic, lot, k.lots)
				if err := n.p2p.Subscribe(lctx, topic, n.onShardGossip(ctx, topic)); err != nil {
					n.log.Warn("follow lot topic", "topic", topic, "err", err)
				}
			}
		}
		n.rLots.by[k] = cancel
		n.log.Info("following a shard's lots", "shard", k.s, "lots", k.lots, "followed", followed)
	}
}
