package p2p

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

const (
	// identifyRetryBackoff is how long after reconnecting a peer whose
	// identify failed it is left alone if identify fails again. On an
	// overloaded node every identify can time out, and reconnecting on
	// each failure fed the overload: 848 reconnects among 50 nodes in five
	// minutes of BenchmarkAuction on a loaded machine, against 6 on a
	// quieter one.
	identifyRetryBackoff = 2 * time.Minute
	// At most identifyRedialsMax reconnects per identifyRedialsWindow,
	// whatever the peers. A node needs one or two (its first connections,
	// to a busy bootstrap peer); a node whose identifies fail by the dozen
	// is itself too busy to answer in time, and closing its connections
	// only adds handshakes: at 200 nodes on one machine, 2,545
	// connections were closed this way in the first 90 s, and the network
	// never formed.
	identifyRedialsMax    = 4
	identifyRedialsWindow = 30 * time.Second
)

// identifyRetries remembers when each peer was last reconnected after a
// failed identify, and the reconnects of the last identifyRedialsWindow.
// It is used by one goroutine.
type identifyRetries struct {
	last   map[peer.ID]time.Time
	recent []time.Time // oldest first
}

func newIdentifyRetries() *identifyRetries {
	return &identifyRetries{last: map[peer.ID]time.Time{}}
}

// allow reports whether p may be reconnected now, and if so notes it.
func (r *identifyRetries) allow(p peer.ID, now time.Time) bool {
	if at, ok := r.last[p]; ok && now.Sub(at) < identifyRetryBackoff {
		return false
	}
	for len(r.recent) > 0 && now.Sub(r.recent[0]) >= identifyRedialsWindow {
		r.recent = r.recent[1:]
	}
	if len(r.recent) >= identifyRedialsMax {
		return false
	}
	// The window bounds the peers remembered: those of the last backoff,
	// identifyRedialsMax per window.
	for q, at := range r.last {
		if now.Sub(at) >= identifyRetryBackoff {
			delete(r.last, q)
		}
	}
	r.last[p] = now
	r.recent = append(r.recent, now)
	return true
}

// redoFailedIdentify closes the connections of a peer whose identify
// failed before it was ever identified. libp2p identifies a connection
// once, with a 5 s limit, and never again: a busy peer that answers late
// stays connected but unidentified, so the DHT never adds it to the
// routing table and this node never learns its protocols. A node whose
// only connection is such a one (a newcomer to a busy bootstrap peer) was
// connected, not ready, for minutes. Closed, the connection is dialed
// again (by the reconnect loop, the DHT or gossipsub) and identified
// afresh. Each peer is reconnected at most once per identifyRetryBackoff,
// and at most identifyRedialsMax peers per identifyRedialsWindow.
func (n *Node) redoFailedIdentify(ctx context.Context) {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtPeerIdentificationFailed))
	if err != nil {
		n.log.Warn("subscribe to identify failures", "err", err)
		return
	}
	defer sub.Close()
	retries := newIdentifyRetries()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			p := e.(event.EvtPeerIdentificationFailed).Peer
			if protos, err := n.host.Peerstore().GetProtocols(p); err == nil && len(protos) > 0 {
				continue // identified on another connection, or before
			}
			if n.host.Network().Connectedness(p) != network.Connected || !retries.allow(p, time.Now()) {
				continue
			}
			n.log.Debug("identify failed; reconnecting", "peer", p)
			n.metrics.identifyRedone()
			n.closePeer(p, ClosedIdentify)
		}
	}
}
