package nodetest

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/idlegrid/idlegrid/node"
)

// Network benchmark parameters. The defaults are what docs/benchmarks.md
// reports; the flags exist so that a variant can be rerun from the
// command line (go test ... -args -netbench.heartbeat=100ms) instead of
// by editing code.
var (
	benchLatency = flag.Duration("netbench.latency", 5*time.Millisecond,
		"mocknet one-way latency per link (applied to every write)")
	benchHeartbeat = flag.Duration("netbench.heartbeat", time.Second,
		"gossipsub heartbeat; 1s is the production default")
	benchConnLow     = flag.Int("netbench.connlow", 16, "connection manager low water mark")
	benchConnHigh    = flag.Int("netbench.connhigh", 32, "connection manager high water mark")
	benchMsgs        = flag.Int("netbench.msgs", 100, "gossip messages per benchmark iteration")
	benchHeapProfile = flag.String("netbench.heapprofile", "",
		"write a heap profile to FILE.<nodes> while each cluster is still up")
	benchEvery = flag.Duration("netbench.every", 50*time.Millisecond,
		"interval between two published messages")
)

const (
	// deliveryDeadline is the generous bound after which a message that
	// has not reached every subscriber counts as lost and fails the run.
	deliveryDeadline = 30 * time.Second
	kindProbe        = 'p'
	kindMeasure      = 'm'
)

// BenchmarkNetwork measures an in-process idlegrid network on mocknet
// with connection limits on: how long until every routing table is
// non-empty, gossip delivery latency on the RFQ topic at every
// subscribing provider, and heap and goroutines per node.
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkNetwork -benchtime=1x -count=3 -timeout 60m
func BenchmarkNetwork(b *testing.B) {
	if testing.Short() {
		// 200 nodes take minutes and gigabytes on a small machine.
		b.Skip("network benchmark skipped in -short mode")
	}
	for _, n := range []int{50, 200} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchNetwork(b, n) })
	}
}

func benchNetwork(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
	defer cancel()

	// Baseline before the cluster exists: what earlier runs (and the test
	// binary) left behind is not charged to this network.
	baseHeap, baseG := liveHeap()
	storeHeap := storeCost(b)

	c, t0, rtReady := benchCluster(b, ctx, n, nil)
	pr := newProber(b, ctx, c, uint64(n), nil)
	pr.waitMesh(b, ctx)
	meshReady := time.Since(t0)

	busy0 := cpuBusy()
	for b.Loop() {
		tick := time.NewTicker(*benchEvery)
		var sent []uint64
		for range *benchMsgs {
			s, err := pr.publish(ctx, kindMeasure)
			if err != nil {
				b.Fatalf("publish: %v", err)
			}
			sent = append(sent, s)
			<-tick.C
		}
		tick.Stop()
		if err := pr.waitDelivered(ctx, sent); err != nil {
			b.Fatal(err)
		}
	}

	cpu := cpuBusy().since(busy0)
	// Measured while the network is still up: this is its steady state.
	heap, g := liveHeap()
	if *benchHeapProfile != "" {
		writeHeapProfile(b, fmt.Sprintf("%s.%d", *benchHeapProfile, n))
	}
	conns, maxConns := connStats(c)
	lat, ratio := pr.rec.result()
	b.ReportMetric(ms(rtReady), "rt_ready_ms")
	b.ReportMetric(ms(meshReady), "mesh_ready_ms")
	b.ReportMetric(ms(percentile(lat, 0.50)), "gossip_p50_ms")
	b.ReportMetric(ms(percentile(lat, 0.95)), "gossip_p95_ms")
	b.ReportMetric(ms(percentile(lat, 1)), "gossip_max_ms")
	b.ReportMetric(ratio, "delivery_ratio")
	perNode := float64(int64(heap)-int64(baseHeap)) / float64(n) / (1 << 20)
	b.ReportMetric(perNode, "heap_MB/node")
	b.ReportMetric(float64(storeHeap)/(1<<20), "store_MB/node")
	b.ReportMetric(perNode-float64(storeHeap)/(1<<20), "net_heap_MB/node")
	b.ReportMetric(cpu, "cpu_busy")
	b.ReportMetric(float64(g-baseG)/float64(n), "goroutines/node")
	b.ReportMetric(conns, "conns/node")
	b.Logf("nodes=%d: %d latency samples, probe RFQ %d bytes, max conns %d (bootstrap %d), redials %.0f, heap %.0f MiB total",
		n, len(lat), pr.size, maxConns, len(c.Members[0].Node.P2P().Host().Network().Peers()),
		counterSum(c, "idlegrid_p2p_redials_total"), float64(heap-baseHeap)/(1<<20))
	if ratio != 1 {
		b.Fatalf("delivery ratio %.4f, want 1", ratio)
	}
}

// benchCluster starts an n-member benchmark cluster with the flags' link
// latency, connection limits and heartbeat (configure adjusts further),
// waits until every routing table is non-empty, and trims every member
// at or above its high water mark once. It returns the cluster, when its
// nodes started, and how long the routing tables took.
func benchCluster(b *testing.B, ctx context.Context, n int, configure func(i int, cfg *node.Config)) (*Cluster, time.Time, time.Duration) {
	b.Helper()
	c, err := Start(n, Options{
		Configure: func(i int, cfg *node.Config) {
			cfg.P2P.ConnLow, cfg.P2P.ConnHigh = *benchConnLow, *benchConnHigh
			// No grace period: limits bite from the first trim (every 10 s,
			// the connection manager's silence period) instead of after the
			// one minute production grants, longer than the whole run.
			cfg.P2P.ConnGrace = 0
			cfg.P2P.GossipHeartbeat = *benchHeartbeat
			if configure != nil {
				configure(i, cfg)
			}
		},
		Link: mocknet.LinkOptions{Latency: *benchLatency},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	// Start returns once every node's Run is launched: the network starts
	// forming now.
	t0 := time.Now()
	if err := WaitFor(ctx, "every routing table non-empty", func() bool {
		return !slices.ContainsFunc(c.Members, func(m *Member) bool { return !m.Node.Ready() })
	}); err != nil {
		b.Fatal(err)
	}
	rtReady := time.Since(t0)

	// The connection managers trim only when their 10 s ticker finds them
	// at or above the high water mark; a short run would otherwise be
	// measured before the limits ever bit. Trim every such member once
	// now, as that tick would, then let the mesh recover before measuring.
	for _, m := range c.Members {
		h := m.Node.P2P().Host()
		if len(h.Network().Conns()) >= *benchConnHigh {
			h.(*limitedHost).cm.TrimOpenConns(ctx)
		}
	}
	return c, t0, rtReady
}
