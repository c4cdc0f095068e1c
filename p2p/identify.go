package p2p

import (
	"context"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
)

// redoFailedIdentify closes the connections of a peer whose identify
// failed before it was ever identified. libp2p identifies a connection
// once, with a 5 s limit, and never again: a busy peer that answers late
// stays connected but unidentified, so the DHT never adds it to the
// routing table and this node never learns its protocols. A node whose
// only connection is such a one (a newcomer to a busy bootstrap peer) was
// connected, not ready, for minutes. Closed, the connection is dialed
// again (by the reconnect loop, the DHT or gossipsub) and identified
// afresh.
func (n *Node) redoFailedIdentify(ctx context.Context) {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtPeerIdentificationFailed))
	if err != nil {
		n.log.Warn("subscribe to identify failures", "err", err)
		return
	}
	defer sub.Close()
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
			if n.host.Network().Connectedness(p) != network.Connected {
				continue
			}
			n.log.Debug("identify failed; reconnecting", "peer", p)
			n.metrics.identifyRedone()
			_ = n.host.Network().ClosePeer(p)
		}
	}
}
