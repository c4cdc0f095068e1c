package p2p

import (
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// AdmissionConfig keeps inbound room for newcomers. The resource manager
// refuses inbound connections once its limit is reached, so a flood of
// fresh identities could otherwise hold every slot and lock honest
// newcomers out. Admission caps inbound connections below that limit and,
// when a new one goes over, closes the youngest connection of the most
// crowded subnet: the flood pays, and a newcomer from anywhere else gets
// in.
type AdmissionConfig struct {
	// MaxInbound is the inbound connections kept. Zero means three
	// quarters of the resource manager's inbound limit (ConnHigh on an
	// injected host); negative turns admission off.
	MaxInbound int
	// Subnet groups a connection by its remote address; connections of
	// one group compete with each other first. The default is the /24
	// (IPv4) or /48 (IPv6) network. Tests inject their own, since every
	// loopback peer shares one.
	Subnet func(p peer.ID, remote ma.Multiaddr) string
}

// Connection refusal reasons, the label values of the connection refusal
// metric (RefusedBanned, for the gater, is shared with streams).
const (
	RefusedCrowdedSubnet = "evicted_crowded_subnet"
)

// DefaultSubnet is the default AdmissionConfig.Subnet: the /24 (IPv4) or
// /48 (IPv6) network of the remote address, or the address itself when it
// has no IP.
func DefaultSubnet(_ peer.ID, remote ma.Multiaddr) string {
	ip, err := manet.ToIP(remote)
	if err != nil {
		return remote.String()
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
}

// admission tracks inbound connections and picks whom to evict.
type admission struct {
	max       int
	subnet    func(peer.ID, ma.Multiaddr) string
	protected func(peer.ID) bool
	evicted   func(network.Conn)

	mu      sync.Mutex
	inbound map[network.Conn]inboundConn
}

type inboundConn struct {
	peer   peer.ID
	subnet string
	opened time.Time
}

func newAdmission(max int, subnet func(peer.ID, ma.Multiaddr) string, protected func(peer.ID) bool, evicted func(network.Conn)) *admission {
	if subnet == nil {
		subnet = DefaultSubnet
	}
	return &admission{max: max, subnet: subnet, protected: protected, evicted: evicted, inbound: map[network.Conn]inboundConn{}}
}

// connected records an inbound connection and, over the cap, evicts one.
// It runs inside the swarm's notification and must not block.
func (a *admission) connected(c network.Conn, now time.Time) {
	if c.Stat().Direction != network.DirInbound {
		return
	}
	p := c.RemotePeer()
	ic := inboundConn{peer: p, subnet: a.subnet(p, c.RemoteMultiaddr()), opened: now}
	a.mu.Lock()
	a.inbound[c] = ic
	var victim network.Conn
	if len(a.inbound) > a.max {
		victim = pickEviction(a.inbound, a.protected)
		if victim != nil {
			delete(a.inbound, victim)
		}
	}
	a.mu.Unlock()
	if victim != nil {
		a.evicted(victim)
	}
}

func (a *admission) disconnected(c network.Conn) {
	a.mu.Lock()
	delete(a.inbound, c)
	a.mu.Unlock()
}

// pickEviction is the admission rule: among unprotected inbound
// connections, the youngest of the subnet with the most of them (ties go
// to the subnet whose youngest is younger). nil when every connection is
// protected.
func pickEviction[C comparable](conns map[C]inboundConn, protected func(peer.ID) bool) C {
	type group struct {
		n        int
		youngest C
		at       time.Time
	}
	groups := map[string]*group{}
	for c, ic := range conns {
		if protected != nil && protected(ic.peer) {
			continue
		}
		g := groups[ic.subnet]
		if g == nil {
			g = &group{}
			groups[ic.subnet] = g
		}
		g.n++
		if g.n == 1 || ic.opened.After(g.at) {
			g.youngest, g.at = c, ic.opened
		}
	}
	var best *group
	for _, g := range groups {
		if best == nil || g.n > best.n || (g.n == best.n && g.at.After(best.at)) {
			best = g
		}
	}
	var zero C
	if best == nil {
		return zero
	}
	return best.youngest
}
