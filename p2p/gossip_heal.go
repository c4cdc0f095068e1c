package p2p

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// healGossipLoop works around a go-libp2p-pubsub (v0.19) fault that left
// renters unable to reach a provider after it restarted.
//
// When a peer restarts and reconnects before its old connection is found
// dead (a QUIC connection to a killed process lingers until a stateless
// reset or the idle timeout), pubsub keeps the peer, announces nothing
// new, and learns the new process's subscriptions from its hello. Then the
// old connection's outbound stream dies; pubsub respawns the writer on the
// new connection but first clears every subscription it knew of the peer,
// the new ones included. The peer never announces them again, so for as
// long as the connection lasts nothing we publish on its topics reaches
// it (an RFQ finds "0 topic peers" next to a connected provider).
//
// Every well-behaved idlegrid node subscribes to the presence topic. A
// gossip peer whose outbound stream gossipsub dropped while it stayed
// connected (gossipTrace.OnClosedOutboundStream: the fault's first step),
// and that is then absent from the presence topic for longer than the grace
// period, has lost its state: closing the connection, waiting until pubsub
// has dropped the peer and dialing again makes both sides announce afresh.
// Only such peers are healed: a peer that is merely slow to announce (a
// new connection on a busy node) is left alone, since reconnecting it
// costs more of what it is short of, and at 200 nodes on two cores those
// false heals churned connections faster than the network could form.
// Each peer is healed at most once per healBackoff.
func (n *Node) healGossipLoop(ctx context.Context) {
	if n.cfg.PresenceTopic == "" {
		return
	}
	t := time.NewTicker(healInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range n.staleGossipPeers() {
			n.healGossipPeer(ctx, p)
		}
	}
}

const (
	healInterval = time.Second
	healBackoff  = 2 * time.Minute
	// healDropWait bounds the wait for pubsub to drop a closed peer.
	healDropWait = 5 * time.Second
)

// healState is what the heal loop knows: peers whose gossip writer died
// while connected (suspects, since when) and peers healed recently.
type healState struct {
	mu       sync.Mutex
	suspects map[peer.ID]time.Time
	healed   map[peer.ID]time.Time
}

func (h *healState) suspect(p peer.ID, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.suspects == nil {
		h.suspects, h.healed = map[peer.ID]time.Time{}, map[peer.ID]time.Time{}
	}
	if _, ok := h.suspects[p]; !ok {
		h.suspects[p] = at
	}
}

// staleGossipPeers are the suspects missing from the presence topic for
// longer than the grace period (since the suspicion and since their newest
// connection), not healed recently. A suspect that is present again, or
// suspected longer than healBackoff ago, is forgotten. The state's lock is
// never held while asking gossipsub: the tracer reports suspects from
// gossipsub's event loop, which ListPeers waits for.
func (n *Node) staleGossipPeers() []peer.ID {
	h := &n.heal
	h.mu.Lock()
	suspects := maps.Clone(h.suspects)
	h.mu.Unlock()
	if len(suspects) == 0 {
		return nil
	}
	now := time.Now()
	present := n.ps.ListPeers(n.cfg.PresenceTopic)
	var stale, forget []peer.ID
	for p, since := range suspects {
		if slices.Contains(present, p) || now.Sub(since) > healBackoff {
			forget = append(forget, p)
			continue
		}
		if now.Sub(since) < n.cfg.GossipHealGrace {
			continue
		}
		conns := n.host.Network().ConnsToPeer(p)
		if len(conns) == 0 {
			continue
		}
		// The newest connection is the one the peer announces on.
		newest := conns[0].Stat().Opened
		for _, c := range conns[1:] {
			if o := c.Stat().Opened; o.After(newest) {
				newest = o
			}
		}
		if now.Sub(newest) >= n.cfg.GossipHealGrace {
			stale = append(stale, p)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, at := range h.healed {
		if now.Sub(at) > healBackoff {
			delete(h.healed, p)
		}
	}
	for _, p := range forget {
		delete(h.suspects, p)
	}
	out := stale[:0]
	for _, p := range stale {
		delete(h.suspects, p)
		if h.healed[p].IsZero() {
			h.healed[p] = now
			out = append(out, p)
		}
	}
	return out
}

// healGossipPeer closes every connection to p, waits until pubsub has
// dropped it (otherwise the dead-peer handling could clear the fresh
// announcements again) and dials it again.
func (n *Node) healGossipPeer(ctx context.Context, p peer.ID) {
	addrs := n.host.Peerstore().Addrs(p)
	n.log.Info("gossip: a connected peer's subscriptions were lost; reconnecting to it", "peer", p)
	n.metrics.gossipHealed()
	n.closePeer(p, ClosedGossipHeal)
	deadline := time.Now().Add(healDropWait)
	for slices.Contains(n.ps.ListPeers(""), p) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	dctx, cancel := context.WithTimeout(ctx, redialTimeout)
	defer cancel()
	if err := n.host.Connect(dctx, peer.AddrInfo{ID: p, Addrs: addrs}); err != nil {
		// The reconnect loop and the peer itself dial again later.
		n.log.Debug("gossip heal: redial", "peer", p, "err", err)
	}
}
