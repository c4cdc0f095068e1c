package nodetest

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/p2p"
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
	benchStartGap    = flag.Duration("netbench.startgap", 0, "time between two members' starts (0: all at once)")
	benchGrace       = flag.Duration("netbench.grace", 10*time.Second, "connection manager grace period for new connections")
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

	c, t0, rtReady := benchCluster(b, ctx, n, "", 1, nil)
	pr := newProber(b, ctx, c, uint64(n), p2p.TopicRFQ, probeSpec, nil)
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

// refusals describes what m refused: bans by reason, connections refused
// or evicted by reason, redial results.
func refusals(m *Member) string {
	mfs, err := m.Registry.Gather()
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, mf := range mfs {
		switch mf.GetName() {
		case "idlegrid_p2p_bans_total", "idlegrid_p2p_conn_refusals_total", "idlegrid_p2p_conns_closed_total", "idlegrid_p2p_redials_total", "idlegrid_p2p_abuse_events_total",
			"idlegrid_p2p_identify_reasked_total", "libp2p_swarm_connections_opened_total", "libp2p_swarm_dial_errors_total":
		case "libp2p_swarm_handshake_latency_seconds":
			var sum float64
			var cnt uint64
			for _, met := range mf.GetMetric() {
				sum += met.GetHistogram().GetSampleSum()
				cnt += met.GetHistogram().GetSampleCount()
			}
			if cnt > 0 {
				parts = append(parts, fmt.Sprintf("handshakes=%d mean=%.2fs", cnt, sum/float64(cnt)))
			}
			continue
		default:
			continue
		}
		for _, met := range mf.GetMetric() {
			var l []string
			for _, lp := range met.GetLabel() {
				l = append(l, lp.GetValue())
			}
			v := met.GetCounter().GetValue()
			if g := met.GetGauge(); g != nil {
				v = g.GetValue()
			}
			parts = append(parts, fmt.Sprintf("%s%v=%.0f", strings.TrimPrefix(mf.GetName(), "idlegrid_p2p_"), l, v))
		}
	}
	return strings.Join(parts, " ")
}

// benchCluster starts an n-member benchmark cluster on mocknet with the
// flags' link latency (transport "") or on real hosts on 127.0.0.1
// (transport "tcp" or "quic"), with that many bootstrap peers and the
// flags' connection limits and heartbeat (configure adjusts further),
// waits until every routing table is non-empty, and trims every member
// at or above its high water mark once. It returns the cluster, when its
// nodes started, and how long the routing tables took.
func benchCluster(b *testing.B, ctx context.Context, n int, transport string, bootstraps int, configure func(i int, cfg *node.Config)) (*Cluster, time.Time, time.Duration) {
	b.Helper()
	c, err := Start(n, Options{
		Configure: func(i int, cfg *node.Config) {
			cfg.P2P.ConnLow, cfg.P2P.ConnHigh = *benchConnLow, *benchConnHigh
			// A short grace period: limits bite within seconds instead of
			// after the minute production grants, longer than a short run;
			// but a connection survives long enough to be identified and
			// used once (with none, a bootstrap peer trimmed newcomers
			// before their first DHT query returned, and 200 nodes never
			// formed).
			cfg.P2P.ConnGrace = *benchGrace
			cfg.P2P.GossipHeartbeat = *benchHeartbeat
			if configure != nil {
				configure(i, cfg)
			}
		},
		Link:       mocknet.LinkOptions{Latency: *benchLatency},
		Transport:  transport,
		StartGap:   *benchStartGap,
		Bootstraps: bootstraps,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	// The network starts forming when the first node runs.
	t0 := c.Started
	last := t0
	if err := WaitFor(ctx, "every routing table non-empty", func() bool {
		var waiting []string
		var first *Member
		for _, m := range c.Members {
			if !m.Node.Ready() {
				if first == nil {
					first = m
				}
				waiting = append(waiting, fmt.Sprintf("%d (%s, %d conns)", m.Index, m.Role, len(m.Node.P2P().ConnectedPeers())))
			}
		}
		if len(waiting) > 0 && time.Since(last) > 10*time.Second {
			last = time.Now()
			logForming(n, c, t0, waiting, first)
		}
		return len(waiting) == 0
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
		if len(h.Network().Conns()) >= m.Config.P2P.ConnHigh {
			h.ConnManager().TrimOpenConns(ctx)
		}
	}
	return c, t0, rtReady
}

// logForming tells a -v run why a network has not formed yet: the members
// whose routing tables are still empty, the first bootstrap peer's
// connections and resource manager, and the first waiting member's
// connections, with what each refused.
func logForming(n int, c *Cluster, t0 time.Time, waiting []string, first *Member) {
	boot := c.Members[0]
	in, out := 0, 0
	for _, cn := range boot.Node.P2P().Host().Network().Conns() {
		if cn.Stat().Direction == network.DirInbound {
			in++
		} else {
			out++
		}
	}
	var sys, id network.ScopeStat
	rm := boot.Node.P2P().Host().Network().ResourceManager()
	_ = rm.ViewSystem(func(s network.ResourceScope) error { sys = s.Stat(); return nil })
	_ = rm.ViewProtocol("/ipfs/id/1.0.0", func(s network.ProtocolScope) error { id = s.Stat(); return nil })
	progress("nodes=%d: %d routing tables still empty after %s: %v; the bootstrap has %d connections in, %d out, resource manager %+v, identify streams in %d; %s", n, len(waiting),
		time.Since(t0).Round(time.Second), waiting[:min(len(waiting), 8)], in, out, sys, id.NumStreamsInbound, refusals(boot))
	progress("nodes=%d: connections closed, all nodes, by the closing side's reason: %s", n, connsClosed(c))
	h := first.Node.P2P().Host()
	var conns []string
	for _, cn := range h.Network().Conns() {
		var protos []string
		for _, st := range cn.GetStreams() {
			protos = append(protos, string(st.Protocol()))
		}
		known, _ := h.Peerstore().GetProtocols(cn.RemotePeer())
		_, noAgent := h.Peerstore().Get(cn.RemotePeer(), "AgentVersion")
		conns = append(conns, fmt.Sprintf("%s %s old, streams %v, knows %d protocols, identified %t", cn.Stat().Direction, time.Since(cn.Stat().Opened).Round(time.Second), protos, len(known), noAgent == nil))
	}
	progress("nodes=%d: member %d: %v; %s", n, first.Index, conns, refusals(first))
}
