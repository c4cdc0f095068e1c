package p2p

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

const (
	redialTimeout     = 10 * time.Second
	redialParallelism = 8
	knownPeerLimit    = 64
	// peerSaveInterval throttles peer book writes for a peer whose
	// addresses did not change.
	peerSaveInterval = 5 * time.Minute
)

type redialState struct {
	attempts int
	next     time.Time
}

type redialResult struct {
	id  peer.ID
	err error
}

// reconnectLoop keeps the node attached to the network. While it has
// fewer than MinPeers idlegrid peers it redials its bootstrap peers and the
// known peers from its peer book. Above that it leaves well alone: a
// bootstrap peer's connection manager trims connections on purpose, and
// redialing them at once would only churn. A bootstrap peer alone always
// redials the other bootstrap peers it is configured with. Each peer backs off
// exponentially (with jitter) between failed attempts, so that after any
// node restarts, bootstrap peers included, the network re-forms instead
// of splitting into islands.
func (n *Node) reconnectLoop(ctx context.Context) {
	tick := min(n.cfg.ReconnectMin, time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	state := map[peer.ID]*redialState{}
	inflight := map[peer.ID]bool{}
	results := make(chan redialResult, redialParallelism)
	for {
		n.redialDue(ctx, state, inflight, results)
		select {
		case <-ctx.Done():
			return
		case r := <-results:
			delete(inflight, r.id)
			n.metrics.redial(r.err == nil)
			if r.err == nil {
				delete(state, r.id)
				n.log.Debug("redialed peer", "peer", r.id)
				continue
			}
			st := state[r.id]
			if st == nil {
				st = &redialState{}
				state[r.id] = st
			}
			st.attempts++
			st.next = time.Now().Add(n.backoff(st.attempts))
			n.log.Debug("redial failed", "peer", r.id, "attempts", st.attempts, "err", r.err)
		case <-t.C:
		}
	}
}

func (n *Node) redialDue(ctx context.Context, state map[peer.ID]*redialState, inflight map[peer.ID]bool, results chan<- redialResult) {
	now := time.Now()
	for _, ai := range n.redialTargets() {
		if ai.ID == n.host.ID() || inflight[ai.ID] {
			continue
		}
		if n.connected(ai.ID) {
			delete(state, ai.ID)
			continue
		}
		if st := state[ai.ID]; st != nil && now.Before(st.next) {
			continue
		}
		if len(inflight) >= redialParallelism {
			return
		}
		inflight[ai.ID] = true
		go func() {
			dctx, cancel := context.WithTimeout(ctx, redialTimeout)
			defer cancel()
			// Our backoff governs redials; the swarm's own per-address
			// backoff (up to minutes) would delay healing after a restart.
			if sw, ok := n.host.Network().(*swarm.Swarm); ok {
				sw.Backoff().Clear(ai.ID)
			}
			err := n.host.Connect(dctx, ai)
			select {
			case results <- redialResult{id: ai.ID, err: err}:
			case <-ctx.Done():
			}
		}()
	}
}

func (n *Node) redialTargets() []peer.AddrInfo {
	if n.stillEnoughPeers() {
		if n.cfg.Bootstrapper {
			// Bootstrap peers hold the network together, and each has
			// its newcomers, so a count of peers never says one is cut
			// off from the others. Two that lost each other, or never
			// met (a first dial refused in a start-up herd), split the
			// network in two for good: at 200 nodes with two of them,
			// each half formed around its own and a message reached 98
			// of 197 providers. They are few, so each keeps its fellows
			// connected.
			return slices.DeleteFunc(slices.Clone(n.cfg.Bootstrap), func(ai peer.AddrInfo) bool { return n.blocklist.Has(ai.ID) })
		}
		return nil
	}
	targets := slices.Clone(n.cfg.Bootstrap)
	if n.book == nil {
		return targets
	}
	known, err := n.book.KnownPeers(knownPeerLimit)
	if err != nil {
		n.log.Warn("read known peers", "err", err)
		return targets
	}
	for _, k := range known {
		if !n.boot[k.ID] {
			targets = append(targets, k)
		}
	}
	return slices.DeleteFunc(targets, func(ai peer.AddrInfo) bool { return n.blocklist.Has(ai.ID) })
}

// backoff is ReconnectMin * 2^(attempts-1), capped at ReconnectMax, with
// ±20% jitter so that a restarted bootstrap peer is not hit by every node
// in the same instant.
func (n *Node) backoff(attempts int) time.Duration {
	d := n.cfg.ReconnectMin
	for i := 1; i < attempts && d < n.cfg.ReconnectMax; i++ {
		d *= 2
	}
	d = min(d, n.cfg.ReconnectMax)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// isIdlegridPeer reports whether a peer speaks our DHT or gossip protocol
// (as opposed to a stray libp2p node).
func (n *Node) isIdlegridPeer(p peer.ID) bool {
	protos, err := n.host.Peerstore().SupportsProtocols(p, DHTProtocol, GossipProtocol)
	return err == nil && len(protos) > 0
}

// stillEnoughPeers is enoughPeers without the per-tick cost: once the node
// has enough peers, it counts again only after a connection closed, or every
// ReconnectMax as a safety net. Runs on the reconnect loop's goroutine.
func (n *Node) stillEnoughPeers() bool {
	now := time.Now()
	lost := n.lostConn.Swap(false)
	if n.hadEnough && !lost && now.Sub(n.countedAt) < n.cfg.ReconnectMax {
		return true
	}
	n.hadEnough, n.countedAt = n.enoughPeers(), now
	return n.hadEnough
}

// enoughPeers reports whether at least MinPeers idlegrid peers are
// connected; it stops counting there, since this runs every tick.
func (n *Node) enoughPeers() bool {
	c := 0
	for _, p := range n.host.Network().Peers() {
		if c >= n.cfg.MinPeers {
			return true
		}
		if n.isIdlegridPeer(p) {
			c++
		}
	}
	return c >= n.cfg.MinPeers
}

// recordPeers saves every identified idlegrid peer in the peer book.
func (n *Node) recordPeers(ctx context.Context) {
	if n.book == nil {
		return
	}
	sub, err := n.host.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted))
	if err != nil {
		n.log.Warn("subscribe to identify events", "err", err)
		return
	}
	defer sub.Close()
	type saved struct {
		at    time.Time
		addrs []ma.Multiaddr
	}
	last := map[peer.ID]saved{}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			ev := e.(event.EvtPeerIdentificationCompleted)
			if !slices.Contains(ev.Protocols, DHTProtocol) && !slices.Contains(ev.Protocols, GossipProtocol) {
				continue
			}
			if len(ev.ListenAddrs) == 0 {
				continue
			}
			prev, ok := last[ev.Peer]
			if ok && time.Since(prev.at) < peerSaveInterval && slices.EqualFunc(prev.addrs, ev.ListenAddrs, ma.Multiaddr.Equal) {
				continue
			}
			now := time.Now()
			if err := n.book.SavePeer(peer.AddrInfo{ID: ev.Peer, Addrs: ev.ListenAddrs}, now); err != nil {
				n.log.Warn("save known peer", "peer", ev.Peer, "err", err)
				continue
			}
			last[ev.Peer] = saved{at: now, addrs: ev.ListenAddrs}
		}
	}
}
