package p2p

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/host/observedaddrs"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/prometheus/client_golang/prometheus"
)

// A NATed node learns its public address from what its peers observe
// (identify). libp2p announces an observed address only once four
// different IPs reported it; a young network has fewer public peers than
// that (often one or two bootstrap peers), so a NATed node never learnt
// its address, AutoNAT never concluded, and auto-relay, which starts on
// AutoNAT's verdict, never took a reservation: it could not be reached at
// all. One observer is enough for us: an observed address is only ever
// dialled, AutoNAT v2 (served by bootstrap peers) confirms it or marks it
// unreachable (and the host stops announcing it), and libp2p's hole
// punching already uses addresses seen once. Set at init, before any host
// reads it, since the value is process-wide.
func init() { observedaddrs.ActivationThresh = 1 }

// RelayConfig sizes the relay v2 service that bootstrap peers run.
//
// With circuit limits (relay v2's defaults, 2 min and 128 KiB in each
// direction per relayed connection) a relay carries signalling: identify,
// hole-punch coordination and small exchanges such as bids. Peers treat
// such a connection as limited: leases, result downloads and service
// tunnels wait for a direct connection (hole punching) instead. With no
// limits (both zero) the relay carries everything, leases included, at
// the operator's bandwidth cost.
type RelayConfig struct {
	// CircuitDuration and CircuitBytes limit each relayed connection:
	// its lifetime, and the bytes relayed in each direction. Both zero:
	// unlimited.
	CircuitDuration time.Duration
	CircuitBytes    int64
	// MaxReservations bounds the peers holding a reservation (0: 128);
	// MaxCircuits bounds the relayed connections of one peer (0: 16).
	MaxReservations, MaxCircuits int
}

// DefaultRelayConfig is relay v2's own default: signalling only.
func DefaultRelayConfig() RelayConfig {
	l := relay.DefaultLimit()
	return RelayConfig{CircuitDuration: l.Duration, CircuitBytes: l.Data}
}

// Unlimited reports whether circuits carry anything for any time.
func (r RelayConfig) Unlimited() bool { return r.CircuitDuration == 0 && r.CircuitBytes == 0 }

// Validate checks the limits: both set, or both zero.
func (r RelayConfig) Validate() error {
	switch {
	case r.CircuitDuration < 0 || r.CircuitBytes < 0 || r.MaxReservations < 0 || r.MaxCircuits < 0:
		return fmt.Errorf("relay limits %+v: must not be negative", r)
	case r.Unlimited():
		return nil
	case r.CircuitDuration == 0 || r.CircuitBytes == 0:
		return errors.New("relay circuit limits: set both duration and bytes, or neither (0 and 0: unlimited)")
	case r.CircuitDuration < 10*time.Second || r.CircuitBytes < 16<<10:
		return fmt.Errorf("relay circuit limits %s and %d bytes are too small for hole-punch coordination (at least 10s and 16 KiB)", r.CircuitDuration, r.CircuitBytes)
	}
	return nil
}

func (r RelayConfig) resources() relay.Resources {
	res := relay.DefaultResources()
	res.Limit = &relay.RelayLimit{Duration: r.CircuitDuration, Data: r.CircuitBytes}
	if r.Unlimited() {
		res.Limit = nil
	}
	if r.MaxReservations > 0 {
		res.MaxReservations = r.MaxReservations
	}
	if r.MaxCircuits > 0 {
		res.MaxCircuits = r.MaxCircuits
	}
	return res
}

// Auto-relay settings of NATed nodes. libp2p's defaults wait for four
// relay candidates or three minutes before the first reservation, and
// back off an hour from a relay that failed once; a network whose relays
// are its few bootstrap peers needs the first reservation within seconds
// and a retry within a minute after a bootstrap peer restarts.
const (
	relayBootDelay   = 5 * time.Second
	relayBackoff     = time.Minute
	relaySourceEvery = 10 * time.Second
	relaysWanted     = 2
)

// bootstrapReachability are the options of a bootstrap peer: public by
// definition, it serves relay v2 circuits, AutoNAT v1 dial-backs and
// AutoNAT v2 (the v2 server runs wherever v2 is enabled), so that NATed
// nodes learn which of their addresses are reachable.
func bootstrapReachability(cfg *Config) []libp2p.Option {
	return []libp2p.Option{
		libp2p.ForceReachabilityPublic(),
		libp2p.EnableRelayService(relay.WithResources(cfg.Relay.resources())),
		libp2p.EnableNATService(),
		libp2p.EnableAutoNATv2(),
	}
}

// natTraversal are the options of a node that may sit behind a NAT: port
// mapping (UPnP, NAT-PMP), AutoNAT v2, auto-relay through the relays
// source finds, and hole punching, whose outcomes trace records (with
// libp2p's hole-punch metrics on reg, which a tracer option would
// otherwise replace).
func natTraversal(source autorelay.PeerSource, trace holepunch.EventTracer, reg prometheus.Registerer) []libp2p.Option {
	punch := holepunch.WithTracer(trace)
	if reg != nil {
		punch = holepunch.WithMetricsAndEventTracer(holepunch.NewMetricsTracer(holepunch.WithRegisterer(reg)), trace)
	}
	return []libp2p.Option{
		libp2p.NATPortMap(),
		libp2p.EnableAutoNATv2(),
		libp2p.EnableAutoRelayWithPeerSource(source,
			autorelay.WithMinCandidates(1),
			autorelay.WithNumRelays(relaysWanted),
			autorelay.WithBootDelay(relayBootDelay),
			autorelay.WithBackoff(relayBackoff),
			autorelay.WithMinInterval(relaySourceEvery),
		),
		libp2p.EnableHolePunching(punch),
	}
}
