package p2p

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
)

// realNode builds a node on real loopback TCP (relays need real hosts),
// runs it until the test ends and closes it.
func realNode(t *testing.T, tweak func(c *Config)) *Node {
	t.Helper()
	cfg := hostConfig(t, "/ip4/127.0.0.1/tcp/0")
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = n.Close()
	})
	return n
}

// relayedPair returns a dialer connected to a target only through relay
// (a reservation the target took there, and the circuit address alone).
func relayedPair(t *testing.T, relay RelayConfig) (dialer, target, relayNode *Node) {
	t.Helper()
	relayNode = realNode(t, func(c *Config) { c.Bootstrapper, c.Relay = true, relay })
	target, dialer = realNode(t, nil), realNode(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ri := peer.AddrInfo{ID: relayNode.ID(), Addrs: relayNode.ListenAddrs()}
	if _, err := client.Reserve(ctx, target.Host(), ri); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	circuit := ri.Addrs[0].Encapsulate(ma.StringCast("/p2p/" + relayNode.ID().String() + "/p2p-circuit"))
	dialer.Host().Peerstore().AddAddrs(relayNode.ID(), ri.Addrs, time.Hour)
	if err := dialer.Host().Connect(ctx, peer.AddrInfo{ID: target.ID(), Addrs: []ma.Multiaddr{circuit}}); err != nil {
		t.Fatalf("connect through the relay: %v", err)
	}
	target.HandleRequests("/test/echo", "test", StreamLimits{MaxRequest: 64, MaxResponse: 64, Timeout: 5 * time.Second},
		func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) { return req, nil })
	return dialer, target, relayNode
}

// Over a relay with circuit limits (relay v2's defaults), a small exchange
// marked OverLimitedRelay goes through; any other waits for a direct
// connection and, when none comes, fails with a RelayOnlyError naming the
// relay and its limits. The path the dialer reports says the same.
func TestLimitedRelayCarriesOnlySmallExchanges(t *testing.T) {
	dialer, target, relay := relayedPair(t, DefaultRelayConfig())
	lim := StreamLimits{MaxRequest: 64, MaxResponse: 64, Timeout: time.Second}

	_, err := dialer.Request(t.Context(), target.ID(), "/test/echo", []byte("bulk"), lim)
	var roe *RelayOnlyError
	if !errors.Is(err, ErrRelayOnly) || !errors.As(err, &roe) {
		t.Fatalf("request over a limited relay: %v, want a RelayOnlyError", err)
	}
	if roe.Peer != target.ID() || roe.Relay != relay.ID() || roe.LimitDuration != 2*time.Minute || roe.LimitBytes != 128<<10 {
		t.Errorf("RelayOnlyError %+v: want the target, the relay and its limits", roe)
	}
	for _, want := range []string{"reachable only through a limited relay", "circuits limited to 2m0s and 128 KiB", "no hole punch was attempted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	lim.OverLimitedRelay = true
	if resp, err := dialer.Request(t.Context(), target.ID(), "/test/echo", []byte("bid"), lim); err != nil || string(resp) != "bid" {
		t.Fatalf("small exchange over a limited relay: %q, %v", resp, err)
	}
	path := pathTo(dialer, target.ID())
	if !strings.HasPrefix(path, "relayed through "+shortID(relay.ID())) || !strings.Contains(path, "limited to 2m0s and 128 KiB") {
		t.Errorf("path %q", path)
	}
}

// A relay whose operator lifted the limits carries everything: the
// connection is a full one.
func TestUnlimitedRelayCarriesEverything(t *testing.T) {
	dialer, target, _ := relayedPair(t, RelayConfig{})
	lim := StreamLimits{MaxRequest: 64, MaxResponse: 64, Timeout: 5 * time.Second}
	if resp, err := dialer.Request(t.Context(), target.ID(), "/test/echo", []byte("lease"), lim); err != nil || string(resp) != "lease" {
		t.Fatalf("request over an unlimited relay: %q, %v", resp, err)
	}
	if path := pathTo(dialer, target.ID()); !strings.HasPrefix(path, "relayed through") || strings.Contains(path, "limited") {
		t.Errorf("path %q: want relayed without limits", path)
	}
}

func pathTo(n *Node, p peer.ID) string {
	for _, pi := range n.Peers() {
		if pi.ID == p {
			return pi.Path
		}
	}
	return ""
}

func TestRelayConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  RelayConfig
		want string
	}{
		{"default", DefaultRelayConfig(), ""},
		{"unlimited", RelayConfig{}, ""},
		{"larger", RelayConfig{CircuitDuration: time.Hour, CircuitBytes: 1 << 30}, ""},
		{"only_duration", RelayConfig{CircuitDuration: time.Minute}, "set both"},
		{"only_bytes", RelayConfig{CircuitBytes: 1 << 20}, "set both"},
		{"negative", RelayConfig{CircuitDuration: -time.Second, CircuitBytes: 1 << 20}, "negative"},
		{"too_small", RelayConfig{CircuitDuration: time.Second, CircuitBytes: 1 << 20}, "too small"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}

// The hole-punch log keeps the latest outcome per peer, bounded.
func TestPunchLogBounded(t *testing.T) {
	var outcomes []bool
	l := newPunchLog(slog.New(slog.DiscardHandler), func(ok bool) { outcomes = append(outcomes, ok) })
	for i := range maxPunchPeers + 10 {
		l.update(peer.ID(rune('a'+i%26))+peer.ID(strings.Repeat("x", i)), func(o *PunchOutcome) { o.Err = "refused" })
	}
	if len(l.byPeer) != maxPunchPeers {
		t.Fatalf("%d peers kept, want %d", len(l.byPeer), maxPunchPeers)
	}
	direct, failed, last := l.tally()
	if direct != 0 || failed != maxPunchPeers || last != "refused" {
		t.Errorf("tally = %d, %d, %q", direct, failed, last)
	}
}

// P2PAddrs lists what works from afar first: public, then relay circuits,
// then private, then loopback.
func TestAddrRank(t *testing.T) {
	addrs := []string{
		"/ip4/127.0.0.1/tcp/1",
		"/ip4/10.0.0.2/tcp/1",
		"/ip4/7.0.0.1/udp/1/quic-v1/p2p/12D3KooWQKN3CnCMs4vmRjUrdZBvsJZXWoqWC17qi1oDqbkdFxD5/p2p-circuit",
		"/ip4/7.0.0.9/tcp/1",
	}
	prev := -1
	for i := len(addrs) - 1; i >= 0; i-- {
		r := addrRank(ma.StringCast(addrs[i]))
		if r <= prev {
			t.Errorf("rank(%s) = %d, not after %d", addrs[i], r, prev)
		}
		prev = r
	}
}

// A bootstrap peer is public by configuration; a node that does not
// check (p2p.nat off) and has only loopback addresses does not know.
func TestReachabilityWithoutNATChecks(t *testing.T) {
	relay := realNode(t, func(c *Config) { c.Bootstrapper = true })
	if r := relay.Reachability(); r.State != ReachPublic || !strings.Contains(r.Detail, "bootstrap") {
		t.Errorf("bootstrap peer: %+v", r)
	}
	plain := realNode(t, nil)
	if r := plain.Reachability(); r.State != ReachUnknown || !strings.Contains(r.Detail, "p2p.nat is off") {
		t.Errorf("node without NAT checks: %+v", r)
	}
}
