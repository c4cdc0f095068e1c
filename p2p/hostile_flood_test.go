package p2p_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// floodSubnets puts every flood identity in one subnet and every other
// peer in a subnet of its own: on loopback all peers share one address, so
// the test says where each comes from.
type floodSubnets struct {
	mu    sync.Mutex
	flood map[peer.ID]bool
}

func (f *floodSubnets) add(p peer.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flood == nil {
		f.flood = map[peer.ID]bool{}
	}
	f.flood[p] = true
}

func (f *floodSubnets) subnet(p peer.ID, _ ma.Multiaddr) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flood[p] {
		return "flood"
	}
	return p.String()
}

// floodTarget is a node whose inbound connections are capped by admission
// at maxInbound (negative: admission off, so only the resource manager's
// limit of 64 inbound connections applies). The connection manager's grace
// period outlasts the test, so it trims nothing.
func floodTarget(tb testing.TB, maxInbound int, subnets *floodSubnets) *p2p.Node {
	return realNode(tb, func(c *p2p.Config) {
		c.ResourceMemory = 64 << 20 // 64 inbound connections: 32 kept, 32 in handshakes
		c.ConnLow, c.ConnHigh, c.ConnGrace = 16, 32, time.Hour
		c.Admission = p2p.AdmissionConfig{MaxInbound: maxInbound, Subnet: subnets.subnet}
	}, p2p.Deps{})
}

func inboundConns(n *p2p.Node) int {
	c := 0
	for _, conn := range n.Host().Network().Conns() {
		if conn.Stat().Direction == network.DirInbound {
			c++
		}
	}
	return c
}

// TestConnFloodLeavesRoomForNewcomer: 120 fresh identities flood a node
// whose admission keeps 30 inbound connections; the flood holds at most
// that many, and an honest newcomer joins on its first try and stays
// while a second wave of the flood arrives.
func TestConnFloodLeavesRoomForNewcomer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	subnets := &floodSubnets{}
	target := floodTarget(t, 30, subnets)
	wave := func(n int) *hostile.Flooder {
		f := hostile.Flood(ctx, addrInfo(target), n, 100, subnets.add)
		t.Cleanup(func() { _ = f.Close() })
		if err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := wave(120)
	// The flood's own view follows the target's closes as they reach it
	// (31 were still open on the flood's side once, just after the target
	// had closed down to 30).
	eventually(t, "flood held to the admission cap", func() bool {
		return inboundConns(target) <= 30 && first.Connected(target.ID()) <= 30
	})

	h, err := hostile.Newcomer(ctx, addrInfo(target))
	if h != nil {
		t.Cleanup(func() { _ = h.Close() })
	}
	if err != nil {
		t.Fatalf("the honest newcomer was refused on its first try: %v", err)
	}
	wave(60)
	if h.Network().Connectedness(target.ID()) != network.Connected {
		t.Fatal("the newcomer was evicted by the flood")
	}
	if !slices.Contains(target.ConnectedPeers(), h.ID()) {
		t.Fatal("the target does not count the newcomer as connected")
	}
	eventually(t, "flood held to the admission cap", func() bool { return inboundConns(target) <= 30 })
}

// TestDistinctSubnetsJoinPastTheCap: honest peers come from distinct
// subnets. 36 of them join a node whose admission keeps 12 inbound
// connections, one after another; each gets in and is still connected
// once the node is back at its cap (an older, idle one made room), and
// the node ends holding the newest ones.
func TestDistinctSubnetsJoinPastTheCap(t *testing.T) {
	const limit, joiners = 12, 36
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	target := floodTarget(t, limit, &floodSubnets{})
	var joined []peer.ID
	for i := range joiners {
		h, err := hostile.Newcomer(ctx, addrInfo(target))
		if h != nil {
			t.Cleanup(func() { _ = h.Close() })
		}
		if err != nil {
			t.Fatalf("newcomer %d was refused: %v", i, err)
		}
		joined = append(joined, h.ID())
		eventually(t, "back at the admission cap", func() bool { return inboundConns(target) <= limit })
		if target.Host().Network().Connectedness(h.ID()) != network.Connected {
			t.Fatalf("newcomer %d of %d (cap %d) was evicted on arrival", i, joiners, limit)
		}
	}
	for i, p := range joined[joiners-limit/4:] {
		if target.Host().Network().Connectedness(p) != network.Connected {
			t.Errorf("newcomer %d, among the newest quarter, is gone", joiners-limit/4+i)
		}
	}
}

// BenchmarkConnFloodNewcomers: 15 honest newcomers join, one every
// 200 ms, while 300 fresh identities flood the node at 100 connections/s;
// with admission (the default cap: the resource manager's 64 inbound
// connections less 32 kept for handshakes) and without it. Reported: newcomers whose first dial
// succeeded, newcomers still connected when the flood ends, and the
// median first-dial time.
func BenchmarkConnFloodNewcomers(b *testing.B) {
	for _, mode := range []struct {
		name       string
		maxInbound int
	}{{"admission", 0}, {"no-admission", -1}} {
		b.Run(mode.name, func(b *testing.B) {
			var firstTry, stayed int
			var joins []time.Duration
			for range b.N {
				f, s, j := floodWithNewcomers(b, mode.maxInbound, 300, 15)
				firstTry += f
				stayed += s
				joins = append(joins, j...)
			}
			slices.Sort(joins)
			b.ReportMetric(float64(firstTry)/float64(b.N), "first_try/15")
			b.ReportMetric(float64(stayed)/float64(b.N), "stayed/15")
			if len(joins) > 0 {
				b.ReportMetric(float64(joins[len(joins)/2].Microseconds())/1000, "join_p50_ms")
			}
		})
	}
}

func floodWithNewcomers(b *testing.B, maxInbound, flood, newcomers int) (firstTry, stayed int, joins []time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	subnets := &floodSubnets{}
	target := floodTarget(b, maxInbound, subnets)
	f := hostile.Flood(ctx, addrInfo(target), flood, 100, subnets.add)
	defer func() { _ = f.Close() }()
	var hosts []interface {
		Close() error
		Network() network.Network
	}
	defer func() {
		for _, h := range hosts {
			_ = h.Close()
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for range newcomers {
		<-tick.C
		start := time.Now()
		h, err := hostile.Newcomer(ctx, addrInfo(target))
		if h != nil {
			hosts = append(hosts, h)
		}
		if err == nil {
			firstTry++
			joins = append(joins, time.Since(start))
		}
	}
	if err := f.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	for _, h := range hosts {
		if h.Network().Connectedness(target.ID()) == network.Connected {
			stayed++
		}
	}
	return firstTry, stayed, joins
}
