package p2p

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Blocklist is a connection gater that refuses blocked peers: no dial to
// them, no connection from them. The node blocks a peer once it has
// verified a fraud proof against it. It is safe for concurrent use.
type Blocklist struct {
	mu      sync.RWMutex
	blocked map[peer.ID]bool
}

// NewBlocklist returns an empty blocklist.
func NewBlocklist() *Blocklist { return &Blocklist{blocked: map[peer.ID]bool{}} }

// Add blocks p; it reports whether p was not blocked before.
func (b *Blocklist) Add(p peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocked[p] {
		return false
	}
	b.blocked[p] = true
	return true
}

// Has reports whether p is blocked.
func (b *Blocklist) Has(p peer.ID) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.blocked[p]
}

// InterceptPeerDial implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptPeerDial(p peer.ID) bool { return !b.Has(p) }

// InterceptAddrDial implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return !b.Has(p) }

// InterceptAccept implements connmgr.ConnectionGater: the peer is not
// known before the handshake, so the check happens in InterceptSecured.
func (b *Blocklist) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return !b.Has(p)
}

// InterceptUpgraded implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// Block refuses p from now on: its connections are closed, gossipsub drops
// its messages, and the gater refuses new connections.
func (n *Node) Block(p peer.ID) {
	if p == n.host.ID() {
		return
	}
	if n.blocklist.Add(p) {
		n.log.Warn("peer blocked", "peer", p)
	}
	n.ps.BlacklistPeer(p)
	_ = n.host.Network().ClosePeer(p)
	n.dht.RoutingTable().RemovePeer(p)
}

// Blocked reports whether p is blocked.
func (n *Node) Blocked(p peer.ID) bool { return n.blocklist.Has(p) }
