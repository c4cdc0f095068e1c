package p2p

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
)

// reaskBackoff is the wait before a peer that did not answer a second
// identify is asked again; it doubles after each unanswered ask. (A
// variable for the tests.)
var reaskBackoff = 15 * time.Second

const (
	// reaskAttempts is how many times a peer is asked before it is left
	// as it is: connected, unknown, and the connection manager's to trim;
	// or, when this node's routing table is empty, disconnected to be
	// dialled afresh.
	reaskAttempts = 4
	// reaskTracked bounds the peers being asked or waiting to be.
	reaskTracked = 256
)

// redoFailedIdentify repairs a peer whose identify failed before it was
// ever identified. libp2p identifies a connection once, with a 5 s limit,
// and never again: a busy peer that answers late stays connected but
// unidentified, so the DHT never adds it to the routing table and this
// node never learns its protocols. A node whose only connection is such a
// one (a newcomer to a busy bootstrap peer) was connected, not ready, for
// minutes. The peer is asked again on the open connection (reidentify),
// with a longer limit, up to reaskAttempts times with a doubling backoff,
// at most reidentifyInFlight at once.
//
// The connection is never closed for it. Closing it to have libp2p
// identify a new one, as this once did, cost a handshake on both sides
// per late peer, on networks short of exactly that: at 200 nodes on one
// machine those closes were the largest share of all, and nodes that
// closed their only connections could not get back in. A connection that
// is really dead is closed by the muxer's keep-alive, QUIC's idle timeout
// or the liveness watch.
//
// sub is the subscription to identify failures, taken before Run's loops
// start; it is closed here.
func (n *Node) redoFailedIdentify(ctx context.Context, sub event.Subscription) {
	defer sub.Close()
	em, err := newIdentifyEmitters(n.host.EventBus())
	if err != nil {
		n.log.Warn("identify repair", "err", err)
		return
	}
	defer em.Close()
	var wg sync.WaitGroup
	defer wg.Wait()

	type answer struct {
		p  peer.ID
		ok bool
	}
	answers := make(chan answer)
	due := make(chan peer.ID)
	asks := map[peer.ID]int{} // tracked peers: asks made so far
	inFlight := 0
	needsRepair := func(p peer.ID) bool {
		if identified(n.host.Peerstore(), p) {
			return false // identified on another connection, or before
		}
		return n.host.Network().Connectedness(p) == network.Connected
	}
	later := func(p peer.ID, d time.Duration) {
		time.AfterFunc(d, func() {
			select {
			case due <- p:
			case <-ctx.Done():
			}
		})
	}
	ask := func(p peer.ID) {
		if !needsRepair(p) {
			delete(asks, p)
			return
		}
		if inFlight >= reidentifyInFlight {
			later(p, reaskBackoff)
			return
		}
		inFlight++
		asks[p]++
		n.metrics.identifyAsked()
		wg.Go(func() {
			err := n.reidentify(ctx, p, em)
			if err != nil {
				n.log.Debug("identify asked again, no answer", "peer", p, "err", err)
			}
			select {
			case answers <- answer{p, err == nil}:
			case <-ctx.Done():
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-answers:
			inFlight--
			switch {
			case a.ok:
				n.metrics.identifyAnswered()
				delete(asks, a.p)
			case asks[a.p] >= reaskAttempts:
				n.metrics.identifyUnanswered()
				delete(asks, a.p)
				if n.dht.RoutingTable().Size() > 0 {
					n.log.Debug("identify asked again, never answered; left to the connection manager", "peer", a.p)
					break
				}
				// This connection may be the node's only way in (a
				// newcomer whose one bootstrap peer was too busy to
				// answer): kept, it would stay unknown and the node
				// isolated. A new connection is identified anew, and the
				// reconnect loop dials one.
				n.log.Info("a peer never answered identify and no other peer is known: reconnecting to it", "peer", a.p)
				n.closePeer(a.p, ClosedUnidentified)
			default:
				n.metrics.identifyUnanswered()
				later(a.p, reaskBackoff<<(asks[a.p]-1))
			}
		case p := <-due:
			ask(p)
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			p := e.(event.EvtPeerIdentificationFailed).Peer
			if _, tracked := asks[p]; tracked || len(asks) >= reaskTracked {
				continue
			}
			asks[p] = 0
			ask(p)
		}
	}
}

// agentVersionKey is where identify, and reidentify after it, store the
// agent a peer named: the one mark that a peer's identify record arrived.
const agentVersionKey = "AgentVersion"

// identified reports whether p's identify record ever arrived. Known
// protocols are no sign of it: a stream this node opens records the
// protocol it negotiated, so a peer whose identify failed (it was dialled
// before it registered its identify handler) and that took this node's
// gossipsub stream a moment later had protocols, the repair left it, and
// the DHT never took it into the routing table.
func identified(ps peerstore.Peerstore, p peer.ID) bool {
	v, err := ps.Get(p, agentVersionKey)
	_, ok := v.(string)
	return err == nil && ok
}
