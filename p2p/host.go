package p2p

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	tls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
)

// dialTimeout bounds one dial, handshakes included, on any address.
const dialTimeout = 15 * time.Second

// newHost builds the libp2p host from explicit options: TCP and QUIC-v1,
// Noise and TLS, yamux, a connection manager, an explicitly sized resource
// manager, identify and ping. Role-specific reachability options follow.
// It also returns how many established inbound connections admission may
// keep (see newResourceManager).
func newHost(cfg *Config, transports []libp2p.Option, closes *closeReasons, muxer *muxerFailures, reg prometheus.Registerer, gater *Blocklist, relaySource autorelay.PeerSource, punches holepunch.EventTracer) (host.Host, int, error) {
	cm, err := connmgr.NewConnManager(cfg.ConnLow, cfg.ConnHigh, connmgr.WithGracePeriod(cfg.ConnGrace))
	if err != nil {
		return nil, 0, fmt.Errorf("p2p: connection manager: %w", err)
	}
	rm, keep, err := newResourceManager(cfg)
	if err != nil {
		return nil, 0, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(cfg.Identity),
		libp2p.ListenAddrs(cfg.ListenAddrs...),
		libp2p.Muxer(yamux.ID, yamuxTransport(muxer)),
		libp2p.ConnectionManager(newReasonedConnManager(cm, closes)),
		libp2p.ResourceManager(rm),
		libp2p.Ping(true),
		libp2p.ConnectionGater(gater),
		libp2p.UserAgent(cfg.UserAgent),
		// A private or loopback address gets the same 15 s as any other
		// (libp2p's default for them is 5 s): on a busy node a handshake
		// takes seconds, and a dial given up halfway has cost both sides
		// the work and is retried, more of what the node is short of (at
		// 200 nodes on one machine most dials timed out that way).
		libp2p.SwarmOpts(swarm.WithDialTimeoutLocal(dialTimeout)),
	}
	if transports == nil {
		transports = []libp2p.Option{
			libp2p.Transport(tcp.NewTCPTransport),
			libp2p.Transport(quic.NewTransport),
			libp2p.Security(noise.ID, noise.New),
			libp2p.Security(tls.ID, tls.New),
		}
	}
	opts = append(opts, transports...)
	if reg != nil {
		opts = append(opts, libp2p.PrometheusRegisterer(withoutRcmgrMetrics{reg}))
	} else {
		opts = append(opts, libp2p.DisableMetrics())
	}
	if len(cfg.AnnounceAddrs) > 0 {
		announce := cfg.AnnounceAddrs
		opts = append(opts, libp2p.AddrsFactory(func([]ma.Multiaddr) []ma.Multiaddr { return announce }))
	}
	switch {
	case cfg.Bootstrapper:
		opts = append(opts, bootstrapReachability(cfg)...)
	case cfg.NATTraversal:
		opts = append(opts, natTraversal(relaySource, punches, reg)...)
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		_ = rm.Close()
		return nil, 0, fmt.Errorf("p2p: libp2p.New: %w", err)
	}
	return h, keep, nil
}

// newResourceManager sizes the limits from an explicit memory and file
// descriptor budget, caps connections per IP and per subnet, and
// allowlists bootstrap peers, so a busy node can always reach its way back
// into the network.
//
// The connection limits follow the connection manager: the system keeps
// room for ConnHigh established connections plus the transient scope's
// handshakes, so that in normal operation the connection manager trims by
// value (with its grace period) and admission is the backstop against a
// flood. It returns the inbound connections admission may keep: the
// system's inbound limit less the transient scope's. The resource manager
// counts a connection against the system from the moment it is accepted,
// so with more established ones than that a newcomer's handshake would be
// refused before admission ever saw it. (The memory budget alone gave
// 96 inbound connections against a ConnHigh of 192: admission, evicting
// at three quarters of that, was the node's trimmer, and with a few dozen
// slow handshakes a bootstrap peer turned every newcomer away; 200 nodes
// starting at once never formed.)
func newResourceManager(cfg *Config) (network.ResourceManager, int, error) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	scaled := limits.Scale(cfg.ResourceMemory, cfg.ResourceFDs)
	partial := scaled.ToPartialLimitConfig()
	atLeast := func(v *rcmgr.LimitVal, n int) {
		if int(*v) < n {
			*v = rcmgr.LimitVal(n)
		}
	}
	atLeast(&partial.System.ConnsInbound, cfg.ConnHigh+int(partial.Transient.ConnsInbound))
	atLeast(&partial.System.Conns, cfg.ConnHigh+int(partial.Transient.Conns))
	atLeast(&partial.System.FD, min(int(partial.System.Conns), cfg.ResourceFDs))
	final := partial.Build(scaled)
	keep := int(partial.System.ConnsInbound) - int(partial.Transient.ConnsInbound)
	// The allowlist takes /ip4|ip6/<addr>/p2p/<id>; DNS addresses cannot be
	// allowlisted and are skipped.
	var allow []ma.Multiaddr
	for _, b := range cfg.Bootstrap {
		for _, a := range b.Addrs {
			var ipc *ma.Component
			ma.ForEach(a, func(c ma.Component) bool {
				if c.Protocol().Code == ma.P_IP4 || c.Protocol().Code == ma.P_IP6 {
					ipc = &c
					return false
				}
				return true
			})
			if ipc == nil {
				continue
			}
			pc, err := ma.NewComponent("p2p", b.ID.String())
			if err != nil {
				continue
			}
			allow = append(allow, ma.Multiaddr{*ipc, *pc})
		}
	}
	perIP := orDefault(cfg.ConnsPerIP, 8)
	perSubnet := orDefault(cfg.ConnsPerSubnet, 32)
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(final),
		rcmgr.WithMetricsDisabled(), // see resourceCollector
		rcmgr.WithAllowlistedMultiaddrs(allow),
		rcmgr.WithLimitPerSubnet(
			[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 32, ConnCount: perIP}, {PrefixLength: 24, ConnCount: perSubnet}},
			[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 56, ConnCount: perIP}, {PrefixLength: 48, ConnCount: perSubnet * 2}},
		))
	if err != nil {
		return nil, 0, fmt.Errorf("p2p: resource manager: %w", err)
	}
	return rm, keep, nil
}

// relayPeerSource feeds auto-relay with candidate relays: the configured
// bootstrap peers (which run the relay service) and any connected peer
// that advertises the relay v2 hop protocol.
func relayPeerSource(bootstrap []peer.AddrInfo, hostFn func() host.Host) autorelay.PeerSource {
	return func(ctx context.Context, num int) <-chan peer.AddrInfo {
		out := make(chan peer.AddrInfo, num)
		defer close(out)
		seen := map[peer.ID]bool{}
		emit := func(ai peer.AddrInfo) bool {
			if seen[ai.ID] || len(out) == cap(out) {
				return len(out) < cap(out)
			}
			seen[ai.ID] = true
			out <- ai
			return len(out) < cap(out)
		}
		for _, b := range bootstrap {
			if !emit(b) {
				return out
			}
		}
		h := hostFn()
		if h == nil {
			return out
		}
		for _, p := range h.Network().Peers() {
			protos, err := h.Peerstore().SupportsProtocols(p, proto.ProtoIDv2Hop)
			if err != nil || len(protos) == 0 {
				continue
			}
			if !emit(peer.AddrInfo{ID: p, Addrs: h.Peerstore().Addrs(p)}) {
				break
			}
		}
		return out
	}
}
