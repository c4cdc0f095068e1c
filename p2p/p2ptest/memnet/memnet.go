// Package memnet is an in-process libp2p transport, for running hundreds
// of whole nodes in one test process.
//
// A node on memnet is a real libp2p host: the real swarm, upgrader,
// resource manager, connection gater and yamux. Only two things differ
// from a node on the internet:
//   - its connections are in-memory pipes, not sockets, so a cluster needs
//     no file descriptors (TCP on loopback needs two per connection and runs
//     out of 20,000 at about 200 nodes);
//   - it does no security handshake: libp2p's insecure transport, which
//     exchanges and checks the peers' public keys but does no key exchange
//     and no signatures.
//
// On the internet each node pays for its own handshakes on its own cores.
// In one process every node's handshakes share the same cores: at 200
// QUIC nodes on two cores they took 3.7 s each and most dials timed out.
// So memnet measures the protocols above the handshake, which is what the
// scale benchmarks are for.
//
// Unlike libp2p's mocknet, dialling takes no lock shared between peers
// (mocknet takes both peers' locks for every connection and every
// Connectedness call, and a 200-node cluster convoys behind them).
//
// Addresses are /ip4/A.B.C.D/tcp/PORT: each node listens on an address of
// its own choosing (a subnet of its own, for the connection admission
// that groups peers by /24), and a dial's far end sees it come from the
// dialling node's listen address with a fresh port, as a TCP peer would.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/transport"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// acceptBacklog is how many dialled connections wait for a listener's
// accept loop before further dials block, as a socket's backlog does. The
// upgrader accepts as fast as its handshake limit allows.
const acceptBacklog = 128

// ErrRefused is a dial to an address nobody listens on.
var ErrRefused = errors.New("memnet: connection refused")

// Network is one in-process network: the listeners its hosts dial.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*listener // listen multiaddr -> listener
	port      atomic.Uint32        // the last dialling port handed out
}

// New returns an empty network.
func New() *Network {
	return &Network{listeners: make(map[string]*listener)}
}

// HostOptions put a libp2p host on n: memnet as its only transport and no
// security handshake. They replace the transport and security options a
// host would otherwise have.
func (n *Network) HostOptions() []libp2p.Option {
	return []libp2p.Option{
		libp2p.Transport(func(u transport.Upgrader, rm network.ResourceManager) (*Transport, error) {
			return &Transport{net: n, upgrader: u, rcmgr: rm}, nil
		}),
		libp2p.NoSecurity,
	}
}

// listener returns the listener at addr, or nil.
func (n *Network) listener(addr ma.Multiaddr) *listener {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listeners[string(addr.Bytes())]
}

func (n *Network) listen(l *listener) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := string(l.addr.Bytes())
	if _, taken := n.listeners[key]; taken {
		return fmt.Errorf("memnet: listen %s: address in use", l.addr)
	}
	n.listeners[key] = l
	return nil
}

func (n *Network) unlisten(l *listener) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listeners[string(l.addr.Bytes())] == l {
		delete(n.listeners, string(l.addr.Bytes()))
	}
}

// nextPort is a dialling port: distinct for every connection, in the
// range a kernel would pick from.
func (n *Network) nextPort() int {
	return 32768 + int(n.port.Add(1)%28000)
}

// Transport is one host's memnet transport.
type Transport struct {
	net      *Network
	upgrader transport.Upgrader
	rcmgr    network.ResourceManager

	mu sync.Mutex
	ip string // the host's listen IP ("/ip4/…"), the source of its dials
}

var _ transport.Transport = (*Transport)(nil)

// CanDial reports whether addr is an /ip4/…/tcp/… address.
func (t *Transport) CanDial(addr ma.Multiaddr) bool {
	ps := addr.Protocols()
	return len(ps) == 2 && ps[0].Code == ma.P_IP4 && ps[1].Code == ma.P_TCP
}

// Protocols: memnet addresses end in /tcp.
func (t *Transport) Protocols() []int { return []int{ma.P_TCP} }

// Proxy: memnet connects directly.
func (t *Transport) Proxy() bool { return false }

func (t *Transport) String() string { return "memnet" }

// Dial connects to the host listening at raddr, charging the resource
// manager and running the upgrader's negotiation as the TCP transport
// does.
func (t *Transport) Dial(ctx context.Context, raddr ma.Multiaddr, p peer.ID) (transport.CapableConn, error) {
	scope, err := t.rcmgr.OpenConnection(network.DirOutbound, true, raddr)
	if err != nil {
		return nil, err
	}
	c, err := t.dial(ctx, raddr, p, scope)
	if err != nil {
		scope.Done()
		return nil, err
	}
	return c, nil
}

func (t *Transport) dial(ctx context.Context, raddr ma.Multiaddr, p peer.ID, scope network.ConnManagementScope) (transport.CapableConn, error) {
	if err := scope.SetPeer(p); err != nil {
		return nil, err
	}
	l := t.net.listener(raddr)
	if l == nil {
		return nil, fmt.Errorf("dial %s: %w", raddr, ErrRefused)
	}
	local, err := t.source()
	if err != nil {
		return nil, err
	}
	select {
	case <-l.closed: // closed but not yet unregistered
		return nil, fmt.Errorf("dial %s: %w", raddr, ErrRefused)
	default:
	}
	ours, theirs := newPipe()
	select {
	case l.accept <- &conn{Conn: theirs, local: l.addr, remote: local}:
	case <-l.closed:
		_ = ours.Close()
		return nil, fmt.Errorf("dial %s: %w", raddr, ErrRefused)
	case <-ctx.Done():
		_ = ours.Close()
		return nil, ctx.Err()
	}
	c, err := t.upgrader.Upgrade(ctx, t, &conn{Conn: ours, local: local, remote: raddr}, network.DirOutbound, p, scope)
	if err != nil {
		_ = ours.Close()
		return nil, err
	}
	return c, nil
}

// source is the address this host's dials come from: its listen IP and a
// fresh port.
func (t *Transport) source() (ma.Multiaddr, error) {
	t.mu.Lock()
	ip := t.ip
	t.mu.Unlock()
	if ip == "" {
		return nil, errors.New("memnet: dial before listen: a memnet host's dials come from its listen address")
	}
	return ma.NewMultiaddr(fmt.Sprintf("%s/tcp/%d", ip, t.net.nextPort()))
}

// Listen registers laddr (/ip4/…/tcp/PORT, PORT not 0) on the network.
func (t *Transport) Listen(laddr ma.Multiaddr) (transport.Listener, error) {
	if !t.CanDial(laddr) {
		return nil, fmt.Errorf("memnet: listen %s: want /ip4/…/tcp/PORT", laddr)
	}
	ip, port := ma.SplitLast(laddr)
	if port.Value() == "0" {
		return nil, fmt.Errorf("memnet: listen %s: choose the port, memnet does not pick one", laddr)
	}
	l := &listener{net: t.net, addr: laddr, accept: make(chan manet.Conn, acceptBacklog), closed: make(chan struct{})}
	if err := t.net.listen(l); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.ip = ip.String()
	t.mu.Unlock()
	return t.upgrader.UpgradeGatedMaListener(t, t.upgrader.GateMaListener(l)), nil
}

// listener is a manet.Listener fed by dials.
type listener struct {
	net    *Network
	addr   ma.Multiaddr
	accept chan manet.Conn
	once   sync.Once
	closed chan struct{}
}

func (l *listener) Accept() (manet.Conn, error) {
	// Closed first: a connection still waiting when the listener closes
	// is closed with it, not handed to an upgrader already shutting down.
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting. Connections dialled but not yet accepted are
// closed, as a socket's backlog is.
func (l *listener) Close() error {
	l.once.Do(func() {
		l.net.unlisten(l)
		close(l.closed)
		for {
			select {
			case c := <-l.accept:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *listener) Multiaddr() ma.Multiaddr { return l.addr }

func (l *listener) Addr() net.Addr {
	a, err := manet.ToNetAddr(l.addr)
	if err != nil {
		return &net.TCPAddr{}
	}
	return a
}

// conn is one end of a memnet connection.
type conn struct {
	net.Conn
	local, remote ma.Multiaddr
}

func (c *conn) LocalMultiaddr() ma.Multiaddr  { return c.local }
func (c *conn) RemoteMultiaddr() ma.Multiaddr { return c.remote }
