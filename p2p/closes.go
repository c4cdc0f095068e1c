package p2p

import (
	"maps"
	"sync"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Reasons a connection was closed, the label values of the closed
// connections metric. Every close this node makes notes its reason first;
// a connection that ends without one was closed by the remote peer or the
// transport (a stream muxer's keep-alive, a reset).
const (
	ClosedConnManager  = "conn_manager"      // trimmed above the high water mark
	ClosedAdmission    = "admission"         // evicted by inbound admission
	ClosedSilent       = "liveness_silent"   // two pings unanswered
	ClosedGossipHeal   = "gossip_heal"       // gossipsub lost the peer's subscriptions
	ClosedBlocked      = "blocked"           // banned or blocked peer
	ClosedUnidentified = "unidentified"      // identify never answered while the routing table was empty
	ClosedRemote       = "remote_or_network" // none of the above: the other side or the transport
)

// closeReasons remembers why this node is closing each connection, until
// the swarm reports it closed.
type closeReasons struct {
	mu      sync.Mutex
	pending map[network.Conn]string
	counts  map[string]uint64 // closed connections by reason
}

// closeReasonsKept bounds the pending reasons; past it, those of
// connections already closed are dropped.
const closeReasonsKept = 4096

func newCloseReasons() *closeReasons {
	return &closeReasons{pending: map[network.Conn]string{}, counts: map[string]uint64{}}
}

// note records why c is about to be closed; the first reason stands.
func (r *closeReasons) note(c network.Conn, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pending[c]; ok || c.IsClosed() {
		return
	}
	if len(r.pending) >= closeReasonsKept {
		for pc := range r.pending {
			if pc.IsClosed() {
				delete(r.pending, pc)
			}
		}
		if len(r.pending) >= closeReasonsKept {
			return
		}
	}
	r.pending[c] = reason
}

// closed returns and forgets why c was closed: ClosedRemote when this
// node did not note a reason.
func (r *closeReasons) closed(c network.Conn) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason, ok := r.pending[c]
	if !ok {
		reason = ClosedRemote
	}
	delete(r.pending, c)
	r.counts[reason]++
	return reason
}

// ConnsClosed is how many of this node's connections have closed, by
// reason (the Closed constants), as the closed connections metric counts
// them, without gathering the registry.
func (n *Node) ConnsClosed() map[string]uint64 {
	n.closes.mu.Lock()
	defer n.closes.mu.Unlock()
	return maps.Clone(n.closes.counts)
}

// closePeer closes every connection to p, noting why.
func (n *Node) closePeer(p peer.ID, reason string) {
	for _, c := range n.host.Network().ConnsToPeer(p) {
		n.closes.note(c, reason)
	}
	_ = n.host.Network().ClosePeer(p)
}

// closeConn closes c in the background (it may be called from a swarm
// notification), noting why.
func (n *Node) closeConn(c network.Conn, reason string) {
	n.closes.note(c, reason)
	go func() { _ = c.Close() }()
}

// reasonedConnManager is the connection manager with its closes noted:
// libp2p's manager trims the connections the swarm handed to its
// notifiee, so it is handed wrappers whose CloseWithError notes
// ClosedConnManager first.
type reasonedConnManager struct {
	connmgr.ConnManager
	closes *closeReasons

	mu      sync.Mutex
	wrapped map[network.Conn]*reasonedConn
}

func newReasonedConnManager(cm connmgr.ConnManager, closes *closeReasons) *reasonedConnManager {
	return &reasonedConnManager{ConnManager: cm, closes: closes, wrapped: map[network.Conn]*reasonedConn{}}
}

// Notifee implements connmgr.ConnManager.
func (m *reasonedConnManager) Notifee() network.Notifiee {
	inner := m.ConnManager.Notifee()
	return &network.NotifyBundle{
		ListenF:      inner.Listen,
		ListenCloseF: inner.ListenClose,
		ConnectedF: func(nw network.Network, c network.Conn) {
			w := &reasonedConn{Conn: c, closes: m.closes}
			m.mu.Lock()
			m.wrapped[c] = w
			m.mu.Unlock()
			inner.Connected(nw, w)
		},
		DisconnectedF: func(nw network.Network, c network.Conn) {
			m.mu.Lock()
			w, ok := m.wrapped[c]
			delete(m.wrapped, c)
			m.mu.Unlock()
			if ok {
				inner.Disconnected(nw, w)
			}
		},
	}
}

// reasonedConn is a connection as the connection manager sees it.
type reasonedConn struct {
	network.Conn
	closes *closeReasons
}

func (c *reasonedConn) Close() error {
	c.closes.note(c.Conn, ClosedConnManager)
	return c.Conn.Close()
}

func (c *reasonedConn) CloseWithError(code network.ConnErrorCode) error {
	c.closes.note(c.Conn, ClosedConnManager)
	return c.Conn.CloseWithError(code)
}
