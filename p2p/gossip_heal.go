package p2p

import (
	"context"
	"slices"
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
// gossip peer connected for longer than the grace period but absent from
// it has lost its state: closing the connection, waiting until pubsub has
// dropped the peer and dialing again makes both sides announce afresh.
// Each peer is healed at most once per healBackoff, so a peer that really
// does not subscribe costs one reconnect per period, not a loop.
func (n *Node) healGossipLoop(ctx context.Context) {
	if n.cfg.PresenceTopic == "" {
		return
	}
	t := time.NewTicker(healInterval)
	defer t.Stop()
	healed := map[peer.ID]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range n.staleGossipPeers(healed) {
			healed[p] = time.Now()
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

// staleGossipPeers are the connected gossip peers missing from the
// presence topic for longer than the grace period, not healed recently.
// Entries of healed older than healBackoff are forgotten.
func (n *Node) staleGossipPeers(healed map[peer.ID]time.Time) []peer.ID {
	now := time.Now()
	for p, at := range healed {
		if now.Sub(at) > healBackoff {
			delete(healed, p)
		}
	}
	present := n.ps.ListPeers(n.cfg.PresenceTopic)
	var stale []peer.ID
	for _, p := range n.ps.ListPeers("") {
		if slices.Contains(present, p) || !healed[p].IsZero() {
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
	return stale
}

// healGossipPeer closes every connection to p, waits until pubsub has
// dropped it (otherwise the dead-peer handling could clear the fresh
// announcements again) and dials it again.
func (n *Node) healGossipPeer(ctx context.Context, p peer.ID) {
	addrs := n.host.Peerstore().Addrs(p)
	n.log.Info("gossip: a connected peer's subscriptions were lost; reconnecting to it", "peer", p)
	n.metrics.gossipHealed()
	if err := n.host.Network().ClosePeer(p); err != nil {
		n.log.Debug("gossip heal: close", "peer", p, "err", err)
	}
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
