package p2p

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// ReachState says how other nodes can reach this one.
type ReachState string

const (
	// ReachPublic: dialable at a public address (confirmed by AutoNAT,
	// announced by the operator, or a bootstrap peer's by definition).
	ReachPublic ReachState = "public"
	// ReachRelayed: behind a NAT, reachable through relay reservations;
	// peers connect through a relay and upgrade to a direct connection
	// by hole punching where the NATs allow it.
	ReachRelayed ReachState = "relayed"
	// ReachUnreachable: behind a NAT with no relay reservation: nobody can
	// connect to this node, only it to others.
	ReachUnreachable ReachState = "unreachable"
	// ReachUnknown: not known yet (AutoNAT still checking), or not
	// checked (p2p.nat off).
	ReachUnknown ReachState = "unknown"
)

// Reachability is what this node knows of how others reach it.
type Reachability struct {
	State ReachState
	// Detail says it in a sentence, for status and logs.
	Detail string
	// PublicAddrs are the public addresses others can dial: confirmed by
	// AutoNAT v2 where it ran, else announced or assumed.
	PublicAddrs []ma.Multiaddr
	// RelayAddrs are the circuit addresses of the relay reservations, and
	// Relays the relays' peer IDs.
	RelayAddrs []ma.Multiaddr
	Relays     []peer.ID
}

// Reachability computes the node's reachability from the host's current
// addresses and AutoNAT's verdicts.
func (n *Node) Reachability() Reachability {
	addrs := n.host.Addrs()
	var r Reachability
	var public []ma.Multiaddr
	for _, a := range addrs {
		if isCircuit(a) {
			r.RelayAddrs = append(r.RelayAddrs, a)
			if id, err := relayOf(a); err == nil && !slices.Contains(r.Relays, id) {
				r.Relays = append(r.Relays, id)
			}
		} else if manet.IsPublicAddr(a) {
			public = append(public, a)
		}
	}
	var confirmed, unreachable []ma.Multiaddr
	if h, ok := n.host.(interface {
		ConfirmedAddrs() (reachable, unreachable, unknown []ma.Multiaddr)
	}); ok {
		confirmed, unreachable, _ = h.ConfirmedAddrs()
	}
	v1 := network.ReachabilityUnknown
	if h, ok := n.host.(interface{ Reachability() network.Reachability }); ok {
		v1 = h.Reachability()
	}
	switch {
	case n.cfg.Bootstrapper:
		r.State, r.PublicAddrs, r.Detail = ReachPublic, public, "public: a bootstrap peer is public by configuration"
	case len(n.cfg.AnnounceAddrs) > 0:
		r.State, r.PublicAddrs, r.Detail = ReachPublic, n.cfg.AnnounceAddrs, "public: at the announced addresses (p2p.announce; not checked)"
	case !n.cfg.NATTraversal && len(public) > 0:
		r.State, r.PublicAddrs, r.Detail = ReachPublic, public, "public address, not checked (p2p.nat is off)"
	case !n.cfg.NATTraversal:
		r.State, r.Detail = ReachUnknown, "not checked (p2p.nat is off) and no public address"
	case len(confirmed) > 0:
		r.State, r.PublicAddrs, r.Detail = ReachPublic, confirmed, "public: AutoNAT confirmed "+joinAddrs(confirmed)
	case v1 == network.ReachabilityPublic:
		r.State, r.PublicAddrs, r.Detail = ReachPublic, public, "public: AutoNAT dialled this node back"
	case len(r.RelayAddrs) > 0:
		r.State, r.Detail = ReachRelayed, fmt.Sprintf("behind a NAT, reachable through %d relay(s) (%s); direct connections by hole punching where the NATs allow", len(r.Relays), joinIDs(r.Relays))
		if direct, failed, lastErr := n.punches.tally(); direct == 0 && failed > 0 {
			r.Detail += fmt.Sprintf("; but hole punching failed with all %d peer(s) tried (last: %s): this NAT likely maps each destination to a new port (symmetric), so peers behind NATs cannot lease from this node; forward TCP and UDP of p2p.listen to it, or set p2p.announce", failed, oneLine(lastErr))
		}
	case v1 == network.ReachabilityPrivate || len(unreachable) > 0:
		r.State, r.Detail = ReachUnreachable, "behind a NAT and no relay reservation yet: other nodes cannot connect to this one (forward TCP and UDP of p2p.listen to this host, or wait for a relay)"
	default:
		r.State, r.Detail = ReachUnknown, "checking (AutoNAT has not concluded yet)"
	}
	return r
}

// watchReachability logs each change of the node's reachability, with the
// time since start (how long a NATed node took to become reachable).
func (n *Node) watchReachability(ctx context.Context) {
	sub, err := n.host.EventBus().Subscribe([]any{
		new(event.EvtLocalAddressesUpdated), new(event.EvtLocalReachabilityChanged), new(event.EvtHostReachableAddrsChanged),
	})
	if err != nil {
		n.log.Warn("subscribe to reachability events", "err", err)
		return
	}
	defer sub.Close()
	// A safety net for changes that come without an event.
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	var last ReachState
	var lastRelays []peer.ID
	for {
		r := n.Reachability()
		if r.State != last || !slices.Equal(r.Relays, lastRelays) {
			n.metrics.setReachability(r.State)
			n.log.Info("reachability", "state", r.State, "detail", r.Detail, "relays", r.Relays,
				"after", n.Uptime().Round(100*time.Millisecond))
			last, lastRelays = r.State, r.Relays
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-sub.Out():
			if !ok {
				return
			}
		case <-t.C:
		}
	}
}

// connected reports whether p has an open connection, relayed ones with
// limits included (libp2p calls those Limited, not Connected): redialing
// such a peer only finds the same connection again.
func (n *Node) connected(p peer.ID) bool {
	c := n.host.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}

func isCircuit(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// relayOf returns the relay of a circuit address: the /p2p/<id> before
// /p2p-circuit.
func relayOf(a ma.Multiaddr) (peer.ID, error) {
	before, _ := ma.SplitFunc(a, func(c ma.Component) bool { return c.Protocol().Code == ma.P_CIRCUIT })
	id, err := before.ValueForProtocol(ma.P_P2P)
	if err != nil {
		return "", err
	}
	return peer.Decode(id)
}

func joinAddrs(as []ma.Multiaddr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func joinIDs(ids []peer.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = shortID(id)
	}
	return strings.Join(s, ", ")
}

// shortID abbreviates a peer ID as the CLI does: 12D3Ko…9V6iHmPh.
func shortID(id peer.ID) string {
	s := id.String()
	if len(s) <= 16 {
		return s
	}
	return s[:6] + "…" + s[len(s)-8:]
}
