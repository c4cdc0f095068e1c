package node

import (
	"context"
	"sync"

	"github.com/idlegrid/idlegrid/auction"
)

// A provider in a shard of several lots joins its lot's RFQ, digest and
// attestation topics beside the shard's (docs/protocol.md §3.6, the
// migration's step 1). The count follows the shard's size, so a lot's
// topics are left when it changes: unlike the shard topics, which a node
// follows for its life, each lot subscription has its own context.
type lotSubscriptions struct {
	mu sync.Mutex
	by map[auction.Shard]lotSubscription
}

type lotSubscription struct {
	lots   int
	cancel context.CancelFunc
}

// followLot joins this provider's lot of shard s in lots lots (leaving
// the lot topics of the count before; lots below 2 only leaves them). It
// is the provider's Deps.FollowLots.
func (n *Node) followLot(s auction.Shard, lots int) {
	n.runCtxMu.Lock()
	ctx := n.runCtx
	n.runCtxMu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	n.lotSubs.mu.Lock()
	defer n.lotSubs.mu.Unlock()
	if n.lotSubs.by == nil {
		n.lotSubs.by = map[auction.Shard]lotSubscription{}
	}
	cur, ok := n.lotSubs.by[s]
	if ok && cur.lots == lots {
		return
	}
	if ok {
		cur.cancel()
		delete(n.lotSubs.by, s)
	}
	if lots < 2 {
		n.log.Info("left the shard's lots", "shard", s)
		return
	}
	lctx, cancel := context.WithCancel(ctx)
	lot := auction.Lot(n.p2p.ID().String(), lots)
	for _, shardTopic := range []string{s.RFQTopic(), s.DigestTopic(), s.AttestTopic()} {
		topic := auction.LotTopic(shardTopic, lot, lots)
		if err := n.p2p.Subscribe(lctx, topic, n.onShardGossip(ctx, topic)); err != nil {
			n.log.Warn("join lot topic", "topic", topic, "err", err)
		}
	}
	n.lotSubs.by[s] = lotSubscription{lots: lots, cancel: cancel}
	n.log.Info("joined the shard's lot", "shard", s, "lot", lot, "lots", lots)
}
