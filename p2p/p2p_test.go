package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Process-wide singletons started by libp2p/badger dependencies.
		goleak.IgnoreTopFunction("github.com/ipfs/go-log/v2/writer.(*MirrorWriter).logRoutine"),
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/transport/quicreuse.(*reuse).gc"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		// mocknet opens the remote half of a stream in its own goroutine
		// (conn.openStream: go rconn.remoteOpenedStream). When the
		// connection is torn down in between, that half joins a conn whose
		// streams were already reset: its transport goroutine, and the
		// handler reading it (a DHT handler, in one CI run), outlive the
		// mocknet. Ignoring them hides no leak of ours: closing the mocknet
		// resets every stream that reached a live connection, which wakes
		// any reader or writer of it.
		goleak.IgnoreTopFunction("github.com/libp2p/go-libp2p/p2p/net/mock.(*stream).transport"),
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/net/mock.(*stream).Read"),
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/net/mock.(*stream).Write"),
	)
}

// mockNet builds n nodes on a fully linked mocknet: node 0 is a bootstrap
// peer that every other node knows.
func mockNet(t *testing.T, n int, tweak func(i int, c *Config)) []*Node {
	t.Helper()
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() })
	nodes := make([]*Node, n)
	var boot peer.AddrInfo
	for i := range n {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := ma.StringCast(fmt.Sprintf("/ip4/10.0.%d.%d/tcp/7401", i/250, i%250+1))
		h, err := mn.AddPeer(sk, addr)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.DHTServer = true
		cfg.GossipHeartbeat = 100 * time.Millisecond
		cfg.ReconnectMin = 100 * time.Millisecond
		cfg.ReconnectMax = time.Second
		if i == 0 {
			cfg.Bootstrapper = true
		} else {
			cfg.Bootstrap = []peer.AddrInfo{boot}
		}
		if tweak != nil {
			tweak(i, &cfg)
		}
		node, err := New(cfg, Deps{Host: h, PeerBook: newMemBook()})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			boot = peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}
		}
		nodes[i] = node
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, node := range nodes {
		wg.Go(func() { _ = node.Run(ctx) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for i := len(nodes) - 1; i >= 0; i-- {
			if err := nodes[i].Close(); err != nil {
				t.Errorf("close node %d: %v", i, err)
			}
		}
	})
	return nodes
}

// hostConfig is DefaultConfig for a real host of a fresh identity,
// listening on listen.
func hostConfig(t *testing.T, listen ...string) Config {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Identity = sk
	for _, a := range listen {
		cfg.ListenAddrs = append(cfg.ListenAddrs, ma.StringCast(a))
	}
	return cfg
}

type memBook struct {
	mu    sync.Mutex
	peers map[peer.ID]peer.AddrInfo
}

func newMemBook() *memBook { return &memBook{peers: map[peer.ID]peer.AddrInfo{}} }

func (b *memBook) SavePeer(ai peer.AddrInfo, _ time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.peers[ai.ID] = ai
	return nil
}

func (b *memBook) KnownPeers(int) ([]peer.AddrInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []peer.AddrInfo
	for _, ai := range b.peers {
		out = append(out, ai)
	}
	return out, nil
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGossipReachesEverySubscriberAndValidatorGates(t *testing.T) {
	nodes := mockNet(t, 6, nil)
	for i, n := range nodes[1:] {
		waitFor(t, fmt.Sprintf("node %d routing table", i+1), 30*time.Second, n.Ready)
	}
	ctx := t.Context()
	type got struct {
		node int
		data string
	}
	recv := make(chan got, 64)
	for i, n := range nodes[1:] {
		if err := n.RegisterValidator(TopicRFQ, func(_ context.Context, _, _ peer.ID, data []byte) Verdict {
			if bytes.HasPrefix(data, []byte("bad")) {
				return Reject
			}
			return Accept
		}); err != nil {
			t.Fatal(err)
		}
		if err := n.Subscribe(ctx, TopicRFQ, func(m Message) {
			select { // later copies are not waited for
			case recv <- got{i + 1, string(m.Data)}:
			default:
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Every subscriber having a topic peer is not enough: two pairs can
	// know only each other, and a subscriber that only knows the others
	// as topic peers, outside any mesh, hears of the message only through
	// IHAVE gossip, for the few heartbeats the message is gossiped; under
	// load that window can pass before the mesh forms. Wait until the
	// message's path exists: the publisher floods it to its topic peers,
	// and every subscriber forwards it to its mesh peers.
	pub := nodes[1]
	waitFor(t, "every subscriber reachable through the publisher's topic peers and the mesh", 60*time.Second, func() bool {
		byID := map[peer.ID]*Node{}
		for _, n := range nodes[1:] {
			byID[n.ID()] = n
		}
		seen := map[peer.ID]bool{pub.ID(): true}
		queue := []*Node{pub}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			next := n.meshPeers(TopicRFQ)
			if n == pub {
				next = n.ListTopicPeers(TopicRFQ)
			}
			for _, p := range next {
				if m, ok := byID[p]; ok && !seen[p] {
					seen[p] = true
					queue = append(queue, m)
				}
			}
		}
		return len(seen) == len(byID)
	})
	// A message the validator rejects never reaches anyone, not even the
	// publisher's own subscription.
	if err := pub.Publish(ctx, TopicRFQ, []byte("bad message"), 0); err == nil {
		t.Fatal("publishing a message our own validator rejects must fail")
	}
	// A connected topic graph is not yet a mesh: a subscriber outside
	// every mesh hears of a message only through a few heartbeats of
	// IHAVE gossip, which a loaded machine can miss while the mesh forms.
	// So the publisher sends a new message every 2 s until every
	// subscriber has received one: each got it through gossip, and only
	// the formation is waited for.
	seq := 0
	publishNext := func() {
		seq++
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := pub.Publish(pctx, TopicRFQ, fmt.Appendf(nil, "hello %d", seq), 1); err != nil {
			t.Fatal(err)
		}
	}
	publishNext()
	seen := map[int]bool{}
	deadline := time.After(60 * time.Second)
	again := time.NewTicker(2 * time.Second)
	defer again.Stop()
	for len(seen) < len(nodes)-1 {
		select {
		case g := <-recv:
			if !strings.HasPrefix(g.data, "hello ") {
				t.Fatalf("node %d received %q", g.node, g.data)
			}
			seen[g.node] = true
		case <-again.C:
			publishNext()
		case <-deadline:
			t.Fatalf("only %d of %d subscribers received any of %d messages: %v", len(seen), len(nodes)-1, seq, seen)
		}
	}
	// The gossip tracer counted each subscriber's first copy and the bytes
	// under the topic's name.
	for i, n := range nodes[2:] {
		if first := testutil.ToFloat64(n.metrics.copies.WithLabelValues(TopicRFQ, "first")); first < 1 {
			t.Errorf("subscriber %d counted %v first copies on %s", i+2, first, TopicRFQ)
		}
		if in := testutil.ToFloat64(n.metrics.gossipBytes.WithLabelValues("in", TopicRFQ)); in < float64(len("hello")) {
			t.Errorf("subscriber %d counted %v bytes in on %s", i+2, in, TopicRFQ)
		}
	}
}

func TestTopicAllowlist(t *testing.T) {
	nodes := mockNet(t, 1, nil)
	err := nodes[0].Publish(t.Context(), "not/allowed", []byte("x"), 0)
	if !errors.Is(err, ErrTopicNotAllowed) {
		t.Fatalf("got %v, want ErrTopicNotAllowed", err)
	}
	big := make([]byte, nodes[0].cfg.MaxMessageSize)
	if err := nodes[0].Publish(t.Context(), TopicRFQ, big, 0); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("oversize publish: got %v, want ErrMessageTooLarge", err)
	}
	if err := nodes[0].RegisterValidator("other", nil); !errors.Is(err, ErrTopicNotAllowed) {
		t.Fatalf("got %v, want ErrTopicNotAllowed", err)
	}
}

func TestRequestResponseLimits(t *testing.T) {
	nodes := mockNet(t, 2, nil)
	a, b := nodes[1], nodes[0]
	const proto = "/idlegrid/test-echo/1.0.0"
	lim := StreamLimits{MaxRequest: 64, MaxResponse: 128, Timeout: 5 * time.Second}
	b.HandleRequests(proto, "idlegrid.test", lim, func(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
		if string(req) == "fail" {
			return nil, errors.New("handler refuses")
		}
		return append([]byte(from.String()[:4]+":"), req...), nil
	})
	ctx := t.Context()
	waitFor(t, "connection", 20*time.Second, func() bool { return len(a.ConnectedPeers()) > 0 })
	resp, err := a.Request(ctx, b.ID(), proto, []byte("ping"), lim)
	if err != nil {
		t.Fatal(err)
	}
	if want := a.ID().String()[:4] + ":ping"; string(resp) != want {
		t.Fatalf("resp %q, want %q", resp, want)
	}
	if _, err := a.Request(ctx, b.ID(), proto, []byte("fail"), lim); err == nil {
		t.Fatal("a handler error must surface as a reset")
	}
	// The server enforces its request limit even when a client ignores it.
	big := bytes.Repeat([]byte("x"), 100)
	loose := lim
	loose.MaxRequest = 1 << 10
	if _, err := a.Request(ctx, b.ID(), proto, big, loose); err == nil {
		t.Fatal("oversize request must be reset by the server")
	}
	if _, err := a.Request(ctx, b.ID(), proto, big, lim); err == nil {
		t.Fatal("oversize request must be refused by the client")
	}
	if _, err := a.Request(ctx, a.ID(), proto, []byte("x"), lim); !errors.Is(err, ErrSelfDial) {
		t.Fatalf("self request: %v", err)
	}
}

func TestReconnectAfterDisconnect(t *testing.T) {
	nodes := mockNet(t, 3, nil)
	a := nodes[1]
	boot := nodes[0].ID()
	waitFor(t, "bootstrap connection", 20*time.Second, func() bool { return len(a.host.Network().ConnsToPeer(boot)) > 0 })
	if err := a.host.Network().ClosePeer(boot); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "redial of bootstrap peer", 20*time.Second, func() bool { return len(a.host.Network().ConnsToPeer(boot)) > 0 })
}

// TestBootstrapPeersKeepEachOther: a bootstrap peer with peers enough of
// its own still redials the other bootstrap peers it is configured with.
// Otherwise two bootstrap peers that lost each other, or never met, split
// the network for good, each half formed around one.
func TestBootstrapPeersKeepEachOther(t *testing.T) {
	// The second bootstrap peer's own newcomers: more than the DHT's
	// low-water mark of 10, below which the DHT would dial the first
	// bootstrap peer by itself.
	const newcomers = 11
	nodes := mockNet(t, 2+newcomers, func(i int, c *Config) {
		c.MinPeers = 1
		c.Bootstrapper = i < 2
		if i >= 2 {
			c.Bootstrap = nil // they meet the second bootstrap peer only
		}
	})
	boot, second := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	connect := func(from, to *Node) {
		t.Helper()
		if err := from.host.Connect(ctx, peer.AddrInfo{ID: to.ID(), Addrs: to.host.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes[2:] {
		connect(n, second)
	}
	connect(nodes[2], boot) // the first keeps a peer of its own, so it redials nobody
	waitFor(t, "the bootstrap connection and the newcomers in the routing table", 20*time.Second, func() bool {
		return second.connected(boot.ID()) && second.dht.RoutingTable().Size() > newcomers
	})
	second.dht.RoutingTable().RemovePeer(boot.ID())
	if err := second.host.Network().ClosePeer(boot.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second bootstrap peer redialling the first", 20*time.Second, func() bool { return second.connected(boot.ID()) })
}

func TestRealHostTCPAndQUIC(t *testing.T) {
	mk := func(boot []peer.AddrInfo, reg prometheus.Registerer) *Node {
		cfg := hostConfig(t, "/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1")
		cfg.DHTServer = true
		cfg.Bootstrap = boot
		cfg.Bootstrapper = boot == nil
		n, err := New(cfg, Deps{Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	reg := prometheus.NewRegistry()
	boot := mk(nil, reg)
	defer boot.Close()
	var quicAddr ma.Multiaddr
	for _, a := range boot.ListenAddrs() {
		if _, err := a.ValueForProtocol(ma.P_QUIC_V1); err == nil {
			quicAddr = a
		}
	}
	if quicAddr == nil {
		t.Fatalf("no QUIC listen address in %v", boot.ListenAddrs())
	}
	// Dial over QUIC only to prove that transport works end to end.
	client := mk([]peer.AddrInfo{{ID: boot.ID(), Addrs: []ma.Multiaddr{quicAddr}}}, nil)
	defer client.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = client.Run(ctx) })
	wg.Go(func() { _ = boot.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := client.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found, libp2pSeries := false, 0
	inbound := -1.0
	for _, mf := range mfs {
		name := mf.GetName()
		switch {
		case name == "idlegrid_dht_routing_table_size":
			found = true
		case name == "idlegrid_p2p_resources_in_use":
			for _, m := range mf.GetMetric() {
				if labelsAre(m.GetLabel(), "scope", "system", "resource", "conns_inbound") {
					inbound = m.GetGauge().GetValue()
				}
			}
		case strings.HasPrefix(name, rcmgrMetricPrefix):
			t.Errorf("%s exported: the resource manager's own metrics are off, and would read 0", name)
		case strings.HasPrefix(name, "libp2p_"):
			libp2pSeries++
		}
	}
	if !found {
		t.Fatal("routing table gauge missing from the injected registry")
	}
	if inbound < 1 {
		t.Errorf("the bootstrap's resource manager counts %v inbound connections, want the client's", inbound)
	}
	if libp2pSeries == 0 {
		t.Error("no libp2p series (swarm, identify, event bus) in the injected registry")
	}
}

func labelsAre(got []*dto.LabelPair, kv ...string) bool {
	want := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = kv[i+1]
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
			return false
		}
		delete(want, l.GetName())
	}
	return len(want) == 0
}
