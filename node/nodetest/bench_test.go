package nodetest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
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

// probeSpec is the job behind gossip probes: a real, signed RFQ of the
// usual size that passes every node's RFQ validator but that no benchmark
// provider bids on (they have A10s, it asks for a T4). Its 60 s bid
// window keeps it from expiring (and being dropped by validators) on a
// slow network before every provider has it.
var probeSpec = func() *auction.JobSpec {
	module := auction.CapabilityCID("idlegrid-bench-probe").String()
	s, err := auction.ParseJobSpec([]byte("name: gossip-probe\nmodule: " + module +
		"\ngpus: 1\ngpu: [t4]\ntier: bronze\nmax_price: 5\nduration: 1h\nbid_window: 60s\n"))
	if err != nil {
		panic(err)
	}
	if err := s.Validate(); err != nil {
		panic(err)
	}
	return s
}()

// prober publishes gossip probes on the RFQ topic and records their
// delivery at every provider.
type prober struct {
	rec       *recorder
	renter    *Member
	providers []*Member
	rng       *rand.Rand
	seq       uint64
	size      int // bytes of the last probe
}

// newProber subscribes every provider to the RFQ topic (a second
// subscription beside the node's own). other, if set, sees every RFQ
// that is not a probe, with its arrival time, at provider i.
func newProber(b *testing.B, ctx context.Context, c *Cluster, seed uint64, other func(i int, data []byte, at time.Time)) *prober {
	b.Helper()
	providers := c.ByRole(node.RoleProvider)
	pr := &prober{
		rec:       newRecorder(providers),
		renter:    c.ByRole(node.RoleRenter)[0],
		providers: providers,
		rng:       rand.New(rand.NewPCG(seed, 2)),
	}
	for i, m := range providers {
		self := m.Node.ID()
		if err := m.Node.P2P().Subscribe(ctx, p2p.TopicRFQ, func(msg p2p.Message) {
			now := time.Now()
			// Our own publications come back through our subscription with
			// zero latency; they are not deliveries.
			if msg.From == self {
				return
			}
			if !pr.rec.add(i, msg.Data, now) && other != nil {
				other(i, msg.Data, now)
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	return pr
}

// publish sends one probe. Every other one comes from a provider, so that
// mesh forwarding from inside the mesh is measured too and not only the
// renter's flood publish to its direct topic peers.
func (pr *prober) publish(ctx context.Context, kind byte) (uint64, error) {
	pr.seq++
	pub := -1 // the renter
	if pr.seq%2 == 0 {
		pub = pr.rng.IntN(len(pr.providers))
	}
	from := pr.renter
	if pub >= 0 {
		from = pr.providers[pub]
	}
	nonce := make([]byte, auction.NonceLen)
	binary.BigEndian.PutUint64(nonce, pr.seq)
	binary.BigEndian.PutUint64(nonce[8:], pr.rng.Uint64())
	rfq, err := probeSpec.RFQ(from.Node.ID(), nonce, time.Now())
	if err != nil {
		return 0, err
	}
	rfq.Addrs = from.Node.P2PAddrs()[:min(len(from.Node.P2PAddrs()), auction.MaxRFQAddrs)]
	data, err := auction.SealRFQ(rfq, from.Key)
	if err != nil {
		return 0, err
	}
	pr.size = len(data)
	// The clock starts here, after building and signing, just before
	// Publish.
	pr.rec.expect(pr.seq, kind, pub, data, time.Now())
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	return pr.seq, from.Node.P2P().Publish(pctx, p2p.TopicRFQ, data, 0)
}

// waitMesh waits until the RFQ mesh is usable: every provider knows
// enough rfq subscribers among its peers for the next heartbeat to fill
// its mesh to Dlo, and then a renter probe and a provider probe have each
// reached every provider. Probes repeat until then; their deliveries are
// not measured.
func (pr *prober) waitMesh(b *testing.B, ctx context.Context) {
	b.Helper()
	const dlo = 5 // gossipsub's default; p2p keeps it
	if err := WaitFor(ctx, "rfq topic peers", func() bool {
		if len(pr.renter.Node.P2P().ListTopicPeers(p2p.TopicRFQ)) == 0 {
			return false
		}
		return !slices.ContainsFunc(pr.providers, func(m *Member) bool {
			return len(m.Node.P2P().ListTopicPeers(p2p.TopicRFQ)) < min(dlo, len(pr.providers)-1)
		})
	}); err != nil {
		b.Fatal(err)
	}
	for {
		s1, err1 := pr.publish(ctx, kindProbe)
		s2, err2 := pr.publish(ctx, kindProbe)
		if err1 != nil || err2 != nil {
			b.Fatalf("probe publish: %v %v", err1, err2)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err := WaitFor(pctx, "probe delivery", func() bool { return pr.rec.complete(s1) && pr.rec.complete(s2) })
		pcancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			b.Fatalf("rfq mesh never carried a probe to every provider: %v", ctx.Err())
		}
	}
}

// waitDelivered waits until every probe in sent reached every provider,
// or fails after deliveryDeadline.
func (pr *prober) waitDelivered(ctx context.Context, sent []uint64) error {
	dctx, dcancel := context.WithTimeout(ctx, deliveryDeadline)
	defer dcancel()
	err := WaitFor(dctx, "delivery to every provider", func() bool {
		return !slices.ContainsFunc(sent, func(s uint64) bool { return !pr.rec.complete(s) })
	})
	if err != nil {
		return fmt.Errorf("%v after %s: %s", err, deliveryDeadline, pr.rec.missing(sent))
	}
	return nil
}

// recorder collects deliveries at the subscribing providers.
type recorder struct {
	mu       sync.Mutex
	ids      []peer.ID           // subscriber index -> peer
	want     map[uint64]int      // seq -> expected deliveries
	got      map[uint64][]bool   // seq -> subscriber -> delivered
	count    map[uint64]int      // seq -> distinct deliveries
	measured map[uint64]bool     // seq -> counts towards the results
	bySum    map[[32]byte]uint64 // SHA-256 of the payload -> seq
	sent     map[uint64]time.Time
	lat      []time.Duration // latencies of measured deliveries
}

func newRecorder(subs []*Member) *recorder {
	r := &recorder{
		want:     map[uint64]int{},
		got:      map[uint64][]bool{},
		count:    map[uint64]int{},
		measured: map[uint64]bool{},
		bySum:    map[[32]byte]uint64{},
		sent:     map[uint64]time.Time{},
	}
	for _, m := range subs {
		r.ids = append(r.ids, m.Node.ID())
	}
	return r
}

// expect registers a message before it is published at sent; pub is the
// publishing subscriber's index, or -1 when the publisher does not
// subscribe (the renter). Deliveries are recognised by the payload's hash,
// which costs far less per delivery than opening the signed RFQ.
func (r *recorder) expect(seq uint64, kind byte, pub int, data []byte, sent time.Time) {
	sum := sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bySum[sum] = seq
	r.sent[seq] = sent
	r.got[seq] = make([]bool, len(r.ids))
	r.want[seq] = len(r.ids)
	r.measured[seq] = kind == kindMeasure
	if pub >= 0 {
		r.got[seq][pub] = true // it has its own message
		r.want[seq]--
	}
}

// add records a delivery at subscriber sub and reports whether data is a
// probe at all.
func (r *recorder) add(sub int, data []byte, now time.Time) bool {
	sum := sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.bySum[sum]
	if !ok {
		return false
	}
	sent := r.sent[seq]
	got := r.got[seq]
	if got[sub] {
		// Content IDs deduplicate, so a second delivery would be a bug;
		// the cluster test checks for it, here it only must not count.
		return true
	}
	got[sub] = true
	r.count[seq]++
	if r.measured[seq] {
		r.lat = append(r.lat, now.Sub(sent))
	}
	return true
}

func (r *recorder) complete(seq uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[seq] >= r.want[seq]
}

// missing describes undelivered messages for the failure report.
func (r *recorder) missing(seqs []uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lost, msgs := 0, 0
	var example string
	for _, s := range seqs {
		if miss := r.want[s] - r.count[s]; miss > 0 {
			lost += miss
			msgs++
			if example == "" {
				i := slices.Index(r.got[s], false)
				example = fmt.Sprintf("; e.g. message %d never reached provider %s", s, r.ids[i])
			}
		}
	}
	return fmt.Sprintf("%d of %d messages incomplete, %d deliveries missing%s", msgs, len(seqs), lost, example)
}

// result returns the measured latencies, sorted, and the delivery ratio
// over measured messages.
func (r *recorder) result() ([]time.Duration, float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	want, got := 0, 0
	for s, m := range r.measured {
		if m {
			want += r.want[s]
			got += r.count[s]
		}
	}
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	if want == 0 {
		return lat, 0
	}
	return lat, float64(got) / float64(want)
}

// writeHeapProfile records what the live network holds. -memprofile
// cannot: it is written after every cluster has been torn down.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// storeCost is the live heap one empty in-memory store holds. Every
// member owns one; reporting it apart separates the network's cost from
// the store's.
func storeCost(b *testing.B) uint64 {
	before, _ := liveHeap()
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	after, _ := liveHeap()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return after - before
}

// cpuSample is the runtime's account of CPU time, in seconds.
type cpuSample struct{ idle, total float64 }

func cpuBusy() cpuSample {
	// The runtime brings its CPU classes up to date only during a GC.
	runtime.GC()
	s := []metrics.Sample{{Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return cpuSample{s[0].Value.Float64(), s[1].Value.Float64()}
}

// since is the fraction of available CPU (GOMAXPROCS x wall time) that
// was busy between two samples: near 1 means the measurement ran on a
// saturated machine and latencies include queueing for a core.
func (s cpuSample) since(t cpuSample) float64 {
	total := s.total - t.total
	if total <= 0 {
		return 0
	}
	return 1 - (s.idle-t.idle)/total
}

// liveHeap is the live heap after a full collection, and the goroutine
// count.
func liveHeap() (uint64, int) {
	// Two cycles: finalizers queued by the first free more in the second.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, runtime.NumGoroutine()
}

// connStats is the mean and the largest number of open connections per
// member.
func connStats(c *Cluster) (mean float64, most int) {
	total := 0
	for _, m := range c.Members {
		k := len(m.Node.P2P().Host().Network().Conns())
		total += k
		most = max(most, k)
	}
	return float64(total) / float64(len(c.Members)), most
}

// percentile is the nearest-rank q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// counterSum adds up a counter family over every member's registry.
func counterSum(c *Cluster, name string) float64 {
	sum := 0.0
	for _, m := range c.Members {
		mfs, err := m.Registry.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
