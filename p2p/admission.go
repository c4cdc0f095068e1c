package p2p

import (
	"net"
	"slices"
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
// newcomers out. Admission caps inbound connections below that limit;
// when a new one goes over the cap it closes one, chosen so that neither a
// flood nor plain popularity shuts newcomers out:
//
//   - a crowded subnet (more than its share of the cap) loses its youngest
//     connection: the flood pays, and a newcomer from anywhere else gets
//     in;
//   - otherwise the least valuable established connection goes, in the
//     connection manager's order: never a lease party or bootstrap peer,
//     then peers the connection manager does not protect before those it
//     does (gossip mesh, close routing-table buckets), the lowest score
//     (connection manager tags plus gossip score), the idlest (fewest open
//     streams), the oldest;
//   - the youngest quarter of the cap is kept for newcomers and is never
//     chosen by that order. On the internet honest peers come from
//     distinct subnets, so the newest connection would otherwise be the
//     one to go, every time, and a popular bootstrap peer would turn away
//     everyone who arrives after it filled up.
type AdmissionConfig struct {
	// MaxInbound is the inbound connections kept. Zero means the resource
	// manager's inbound limit less its transient one, so that newcomers'
	// handshakes always fit (ConnHigh on an injected host); negative turns
	// admission off.
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
	RefusedOverCap       = "evicted_over_cap"
)

// DefaultSubnet is the default AdmissionConfig.Subnet: the /24 (IPv4) or
// /48 (IPv6) network of the remote address, or the address itself when it
// has no IP. A loopback peer is a process on this machine, not a stranger's
// subnet: each is a group of its own (the resource manager exempts loopback
// from its per-address limits too), so local nodes are not one crowd.
func DefaultSubnet(p peer.ID, remote ma.Multiaddr) string {
	ip, err := manet.ToIP(remote)
	if err != nil {
		return remote.String()
	}
	if ip.IsLoopback() {
		return "loopback/" + p.String()
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
}

// connValue is what keeping one connection is worth, in the connection
// manager's terms.
type connValue struct {
	// kept: the connection manager protects the peer (gossip mesh, close
	// routing-table buckets).
	kept bool
	// score is the connection manager's tag value plus the gossip score.
	score float64
	// streams open on the connection; none means idle.
	streams int
}

// evictionRule is what pickEviction needs besides the connections.
type evictionRule[C comparable] struct {
	// crowd: a subnet holding more inbound connections than this is
	// crowded.
	crowd int
	// newcomers: the youngest this many unprotected connections are never
	// chosen by value.
	newcomers int
	// protected peers (lease parties, bootstrap) are never chosen.
	protected func(peer.ID) bool
	// value of a connection; nil values all alike.
	value func(C, peer.ID) connValue
}

// admissionRule sizes the rule for a cap: a subnet is crowded above an
// eighth of it (at least 2), and a quarter of it is kept for newcomers.
func admissionRule[C comparable](limit int) evictionRule[C] {
	return evictionRule[C]{crowd: max(2, limit/8), newcomers: max(1, limit/4)}
}

// admission tracks inbound connections and picks whom to evict.
type admission struct {
	max     int
	rule    evictionRule[network.Conn]
	subnet  func(peer.ID, ma.Multiaddr) string
	evicted func(c network.Conn, crowded bool)

	mu      sync.Mutex
	inbound map[network.Conn]inboundConn
}

type inboundConn struct {
	peer   peer.ID
	subnet string
	opened time.Time
}

func newAdmission(limit int, subnet func(peer.ID, ma.Multiaddr) string, protected func(peer.ID) bool,
	value func(network.Conn, peer.ID) connValue, evicted func(c network.Conn, crowded bool)) *admission {
	if subnet == nil {
		subnet = DefaultSubnet
	}
	rule := admissionRule[network.Conn](limit)
	rule.protected, rule.value = protected, value
	return &admission{max: limit, rule: rule, subnet: subnet, evicted: evicted, inbound: map[network.Conn]inboundConn{}}
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
	crowded := false
	if len(a.inbound) > a.max {
		victim, crowded = pickEviction(a.inbound, a.rule)
		if victim != nil {
			delete(a.inbound, victim)
		}
	}
	a.mu.Unlock()
	if victim != nil {
		a.evicted(victim, crowded)
	}
}

func (a *admission) disconnected(c network.Conn) {
	a.mu.Lock()
	delete(a.inbound, c)
	a.mu.Unlock()
}

// pickEviction is the admission rule (see AdmissionConfig): the youngest
// connection of the most crowded subnet if that subnet holds more than
// rule.crowd (ties go to the subnet whose youngest is younger; crowded is
// then true), else the least valuable connection outside the newcomers'
// share. The zero C when nothing may go.
func pickEviction[C comparable](conns map[C]inboundConn, rule evictionRule[C]) (victim C, crowded bool) {
	type group struct {
		n        int
		youngest C
		at       time.Time
	}
	type candidate struct {
		c  C
		ic inboundConn
	}
	groups := map[string]*group{}
	var open []candidate
	for c, ic := range conns {
		if rule.protected != nil && rule.protected(ic.peer) {
			continue
		}
		open = append(open, candidate{c, ic})
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
	var most *group
	for _, g := range groups {
		if most == nil || g.n > most.n || (g.n == most.n && g.at.After(most.at)) {
			most = g
		}
	}
	if most != nil && most.n > rule.crowd {
		return most.youngest, true
	}
	// Youngest first; the newcomers' share is skipped.
	slices.SortFunc(open, func(x, y candidate) int { return y.ic.opened.Compare(x.ic.opened) })
	if len(open) <= rule.newcomers {
		return victim, false
	}
	open = open[rule.newcomers:]
	values := make([]connValue, len(open))
	if rule.value != nil {
		for i, o := range open {
			values[i] = rule.value(o.c, o.ic.peer)
		}
	}
	best := 0
	for i := 1; i < len(open); i++ {
		if lessValuable(values[i], open[i].ic, values[best], open[best].ic) {
			best = i
		}
	}
	return open[best].c, false
}

// lessValuable orders connections for eviction: unprotected by the
// connection manager first, then lower score, fewer streams, older.
func lessValuable(a connValue, ai inboundConn, b connValue, bi inboundConn) bool {
	if a.kept != b.kept {
		return !a.kept
	}
	if a.score != b.score {
		return a.score < b.score
	}
	if a.streams != b.streams {
		return a.streams < b.streams
	}
	return ai.opened.Before(bi.opened)
}
