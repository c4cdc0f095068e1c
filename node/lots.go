package node

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/idlegrid/idlegrid/auction"
)

// A provider follows, for each of its shards, the topics
// auction.ProviderShardTopics names for the lot count its own view puts
// the shard in (docs/protocol.md §3.6, step 3): the shard's own topics
// while it is one lot, its lot's once it is split, and beside them the
// digest topics where its lot's providers are while the count changes.
// The count follows the shard's size, so each topic has its own context:
// a new count joins the topics it adds and leaves those it drops.
type lotSubscriptions struct {
	mu sync.Mutex
	by map[auction.Shard]map[string]context.CancelFunc
}

// followLot moves this provider's topics of shard s to lots lots. It is
// the provider's Deps.FollowLots.
func (n *Node) followLot(s auction.Shard, lots int) {
	n.runCtxMu.Lock()
	ctx := n.runCtx
	n.runCtxMu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	if err := n.followShardLots(ctx, s, lots); err != nil {
		n.log.Warn("join a shard's lot", "shard", s, "lots", lots, "err", err)
		return
	}
	n.log.Info("following the shard's lot", "shard", s, "lot", auction.Lot(n.p2p.ID().String(), lots), "lots", lots)
}

// followShardLots joins the topics of shard s at lots lots that this
// provider does not follow yet and leaves those of s it no longer needs.
func (n *Node) followShardLots(ctx context.Context, s auction.Shard, lots int) error {
	want := auction.ProviderShardTopics(n.p2p.ID().String(), s, lots)
	n.lotSubs.mu.Lock()
	defer n.lotSubs.mu.Unlock()
	if n.lotSubs.by == nil {
		n.lotSubs.by = map[auction.Shard]map[string]context.CancelFunc{}
	}
	cur := n.lotSubs.by[s]
	if cur == nil {
		cur = map[string]context.CancelFunc{}
		n.lotSubs.by[s] = cur
	}
	for topic, cancel := range cur {
		if !slices.Contains(want, topic) {
			cancel()
			delete(cur, topic)
		}
	}
	var errs []error
	for _, topic := range want {
		if _, ok := cur[topic]; ok {
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		if err := n.p2p.Subscribe(tctx, topic, n.onShardGossip(ctx, topic)); err != nil {
			cancel()
			errs = append(errs, err)
			continue
		}
		cur[topic] = cancel
	}
	return errors.Join(errs...)
}
