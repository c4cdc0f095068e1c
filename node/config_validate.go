package node

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/p2p"
)

// Validate checks every value and returns the first problem, naming its key.
func (c *Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	if !slices.Contains(Roles, c.Role) {
		return bad("role", "%q is not a role; want %s", c.Role, words.OneOf(Roles))
	}
	for _, s := range c.P2P.Listen {
		if _, err := ma.NewMultiaddr(s); err != nil {
			return bad("p2p.listen", "%q is not a multiaddr, such as /ip4/0.0.0.0/tcp/%d", s, DefaultP2PPort)
		}
	}
	if len(c.P2P.Listen) == 0 {
		return bad("p2p.listen", "at least one listen address is required")
	}
	for _, s := range c.P2P.Announce {
		if _, err := ma.NewMultiaddr(s); err != nil {
			return bad("p2p.announce", "%q is not a multiaddr, such as /ip4/203.0.113.7/tcp/%d", s, DefaultP2PPort)
		}
	}
	if _, err := c.BootstrapPeers(); err != nil {
		return bad("p2p.bootstrap", "%v", err)
	}
	switch {
	case c.P2P.ConnLow <= 0 || c.P2P.ConnHigh < c.P2P.ConnLow:
		return bad("p2p.conn_high", "need 0 < conn_low (%d) <= conn_high (%d)", c.P2P.ConnLow, c.P2P.ConnHigh)
	case c.P2P.ResourceMemoryMiB < 64:
		return bad("p2p.resource_memory_mib", "%d MiB is too little; at least 64", c.P2P.ResourceMemoryMiB)
	case c.P2P.ResourceFDs < 64:
		return bad("p2p.resource_fds", "%d is too few; at least 64", c.P2P.ResourceFDs)
	case c.P2P.ReconnectMin <= 0 || c.P2P.ReconnectMax < c.P2P.ReconnectMin:
		return bad("p2p.reconnect_max", "need 0 < reconnect_min (%s) <= reconnect_max (%s)", dur(c.P2P.ReconnectMin), dur(c.P2P.ReconnectMax))
	case c.P2P.GossipMaxMessageKiB < 1 || c.P2P.GossipMaxMessageKiB > 4096:
		return bad("p2p.gossip_max_message_kib", "%d: must be 1..4096", c.P2P.GossipMaxMessageKiB)
	case c.P2P.GossipHeartbeat < 10*time.Millisecond:
		return bad("p2p.gossip_heartbeat", "%s is too short; at least 10ms", dur(c.P2P.GossipHeartbeat))
	case c.P2P.TelemetryGossipEvery < 100*time.Millisecond || c.P2P.TelemetryGossipEvery > time.Hour:
		return bad("p2p.telemetry_gossip_every", "%s: must be 100ms..1h (every node of a network uses the same value)", dur(c.P2P.TelemetryGossipEvery))
	case c.P2P.FraudRepeatEvery < time.Second || c.P2P.FraudRepeatEvery > 7*24*time.Hour:
		return bad("p2p.fraud_repeat_every", "%s: must be 1s..168h", dur(c.P2P.FraudRepeatEvery))
	case c.P2P.MinPeers < 0:
		return bad("p2p.min_peers", "must not be negative")
	}
	relay := p2p.RelayConfig{CircuitDuration: c.P2P.RelayCircuitDuration, CircuitBytes: int64(c.P2P.RelayCircuitKiB) << 10}
	if err := relay.Validate(); err != nil {
		return bad("p2p.relay_circuit_kib", "%v", err)
	}
	if c.API.Listen != "" {
		if _, _, err := net.SplitHostPort(c.API.Listen); err != nil {
			return bad("api.listen", "%q: want host:port, for example 127.0.0.1:%d", c.API.Listen, DefaultAPIPort)
		}
	}
	if err := c.validateMarket(); err != nil {
		return err
	}
	if _, err := costs.NewModel(c.Costs); err != nil {
		var ke *costs.KeyError
		if errors.As(err, &ke) {
			return bad(ke.Key, "%s", ke.Msg)
		}
		return bad("costs", "%v", err)
	}
	// The [attest] periods are the lease terms a provider offers, so they
	// keep to the protocol's bounds on terms (docs/protocol.md §7.8).
	period := func(d time.Duration) bool {
		return d >= auction.MinTermsPeriodMs*time.Millisecond && d <= auction.MaxTermsPeriodMs*time.Millisecond
	}
	switch a := c.Attest; {
	case a.Sample < 10*time.Millisecond || a.Window < a.Sample || !period(a.Window):
		return bad("attest.window", "need 10ms <= sample (%s) <= window (%s), and a window of 100ms..10m", dur(a.Sample), dur(a.Window))
	case !period(a.VoucherInterval) || a.VoucherGrace < 0 || a.VoucherGrace > auction.MaxTermsGraceMs*time.Millisecond:
		return bad("attest.voucher_interval", "%s: need 100ms..10m, and a grace (%s) of 0s..10m", dur(a.VoucherInterval), dur(a.VoucherGrace))
	case a.PrepayIntervals < 0 || a.PrepayIntervals > auction.MaxTermsPrepay:
		return bad("attest.prepay_intervals", "%d: must be 0..%d", a.PrepayIntervals, auction.MaxTermsPrepay)
	case a.EnergyTolerance < 0.001 || a.EnergyTolerance > 1:
		return bad("attest.energy_tolerance", "%v: must be in 0.001..1", a.EnergyTolerance)
	case a.MaxSkew < 0 || a.MaxSkew > auction.MaxTermsSkewMs*time.Millisecond:
		return bad("attest.max_skew", "%s: must be 0s..10m (0: the default, 2m)", dur(a.MaxSkew))
	}
	switch e := c.Executor; {
	case e.StopGrace < 0 || e.StopGrace > 10*time.Minute:
		return bad("executor.stop_grace", "%s: must be 0s..10m", dur(e.StopGrace))
	case e.KeepResults < time.Minute:
		return bad("executor.keep_results", "%s is too short; at least 1m so renters can fetch results", dur(e.KeepResults))
	case e.MaxLogMiB < 1 || e.MaxLogMiB > 1024:
		return bad("executor.max_log_mib", "%d: must be 1..1024", e.MaxLogMiB)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		return bad("log.level", "%v", err)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return bad("log.format", "%q: want text or json", c.Log.Format)
	}
	return nil
}
