package nodetest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Auction benchmark parameters; the network flags (netbench.latency,
// .heartbeat, .connlow, .connhigh, .every) apply as well.
var (
	auctionNodes     = flag.String("auctionbench.nodes", "50,200,500", "cluster sizes, comma-separated")
	auctionTransport = flag.String("auctionbench.transport", "tcp",
		`"tcp" or "quic": real hosts on 127.0.0.1; "memnet": real hosts on in-process pipes, no security handshake; "mocknet": libp2p's in-process links with -netbench.latency`)
	auctionJobs   = flag.Int("auctionbench.jobs", 40, "jobs per benchmark iteration, one at a time")
	auctionProbes = flag.Int("auctionbench.probes", 4, "gossip probes after each job's lease, netbench.every apart")
	auctionGPUs   = flag.Int("auctionbench.gpus", 16, "simulated A10s per provider")
	auctionPace   = flag.Duration("auctionbench.pace", 500*time.Millisecond,
		"least time between two job submissions")
	auctionBenchLimits = flag.Bool("auctionbench.netlimits", false,
		"use the -netbench.connlow/connhigh/grace connection limits instead of the auctionbench ones")
	auctionConnLow     = flag.Int("auctionbench.connlow", 64, "connection manager low water mark")
	auctionConnHigh    = flag.Int("auctionbench.connhigh", 192, "connection manager high water mark")
	auctionBootstraps  = flag.Int("auctionbench.bootstraps", 0, "bootstrap peers (0: one per 100 nodes)")
	auctionFormWait    = flag.Duration("auctionbench.formwait", 10*time.Minute, "longest wait for the network to form")
	auctionPprof       = flag.String("auctionbench.pprof", "", "serve net/http/pprof on this address while the benchmark runs")
	auctionFormProfile = flag.String("auctionbench.formprofile", "",
		"write a CPU profile of the network forming (start until formed, at most 3 minutes) to FILE.<nodes>")
)

// BenchmarkAuction measures how an in-process network forms and how long
// the reverse auction itself takes on it, leaving out the bid window a
// renter chooses:
//
//	award = (first bid received - RFQ published) + (lease countersigned - bid window closed)
//
// from the renter's job events, with the gossip latency of the same run
// beside it (RFQ-shaped probes on the A10 shard's RFQ topic, as in
// BenchmarkNetwork, interleaved with the jobs). Jobs go one at a time, at
// most one per auctionbench.pace, so that they never compete for GPUs.
// The nodes are real libp2p hosts on 127.0.0.1 (TCP) by default, each its
// own admission subnet (p2p.DefaultSubnet groups loopback peers by peer
// ID); -auctionbench.transport=memnet puts real hosts on in-process pipes
// with no security handshake (p2p/p2ptest/memnet, addresses 10.x.y.1, no
// added latency), for hundreds of nodes on a few cores, where the
// handshakes of every node would otherwise share them;
// -auctionbench.transport=mocknet puts them on mocknet links instead
// (addresses 10.x.y.1, with -netbench.latency), which serialises each
// node's connections under one lock and stalls past about 100 nodes.
//
// Reported besides the auction: formed_s (start until every routing table
// is non-empty and a renter probe and a provider probe have each reached
// every provider), market_s (until the renter's digest book holds every backed
// provider), fresh_view_s (a renter restarted with an empty store, after
// the jobs: until its digest book holds every provider again), unfilled
// jobs, and what gossip cost the providers while the jobs ran (bench_cost_test.go).
//
//	go test ./node/nodetest -run '^$' -bench 'BenchmarkAuction$' -benchtime=1x -timeout 60m -args -auctionbench.nodes=50,200,500
func BenchmarkAuction(b *testing.B) {
	if testing.Short() {
		b.Skip("auction benchmark skipped in -short mode")
	}
	for _, f := range strings.Split(*auctionNodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 4 {
			b.Fatalf("auctionbench.nodes: %q is not a cluster size of at least 4", f)
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchAuction(b, n) })
	}
}

// benchJob is the spec of benchmark job k: 1 A10, bronze, 1 s, so that a
// lease frees its GPU a second after it starts.
func benchJob(k int) []byte {
	module := DemoModule
	return fmt.Appendf(nil, "name: bench-%04d\nmodule: %s\ngpus: 1\ngpu: [a10]\ntier: bronze\nmax_price: 5\nduration: 1s\nmax_duration: 1s\n", k, module)
}

// rfqArrivals records when each non-probe RFQ reached each provider.
type rfqArrivals struct {
	mu sync.Mutex
	at map[string][]time.Time // RFQ record ID -> arrivals
}

func (r *rfqArrivals) add(_ int, data []byte, at time.Time) {
	id := attest.RecordID(data).String()
	r.mu.Lock()
	r.at[id] = append(r.at[id], at)
	r.mu.Unlock()
}

func (r *rfqArrivals) get(id string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at[id])
}

// auctionTiming is one job's auction, from its renter-side events.
type auctionTiming struct {
	rfqToBid, award, total time.Duration
	bids                   int
	early                  bool
	// askedEveryone: the renter asked every provider to bid
	// (auction.EveryoneBids): the first round's expected bidders stayed
	// silent and brought no bid, or an earlier auction's did on the same
	// shard (node/renter/silence.go).
	askedEveryone bool
}

// jobTiming reads the first round of an auction from j's events. Event
// times have millisecond resolution.
func jobTiming(j *store.Job) (t auctionTiming, rfqAt int64, err error) {
	var bidAt, windowAt, leaseAt int64
	for _, ev := range j.Events {
		switch {
		case ev.Kind == "rfq" && rfqAt == 0:
			rfqAt = ev.AtMs
		case ev.Kind == "bid" && rfqAt != 0 && windowAt == 0 && bidAt == 0:
			// Only the first bid is kept in a job's history.
			bidAt = ev.AtMs
		case ev.Kind == "window" && rfqAt != 0 && windowAt == 0:
			windowAt = ev.AtMs
			t.bids = ev.Bids
			t.early = strings.Contains(ev.Message, "early")
		case ev.Kind == "retry" && windowAt == 0,
			ev.Kind == "rfq" && windowAt == 0 && strings.Contains(ev.Message, "every provider"):
			t.askedEveryone = true
		case ev.Kind == "lease" && windowAt != 0 && leaseAt == 0:
			leaseAt = ev.AtMs
		}
	}
	if rfqAt == 0 || bidAt == 0 || windowAt == 0 || leaseAt == 0 {
		return t, 0, fmt.Errorf("job %s (%s): events lack rfq/bid/window/lease (%d, %d, %d, %d)", j.Name, j.State, rfqAt, bidAt, windowAt, leaseAt)
	}
	t.rfqToBid = time.Duration(bidAt-rfqAt) * time.Millisecond
	t.award = time.Duration(leaseAt-windowAt) * time.Millisecond
	t.total = t.rfqToBid + t.award
	return t, rfqAt, nil
}

// slowAward is the award round trip past which a -v run lists the job's
// events, to show where the time went.
const slowAward = 300 * time.Millisecond

// jobEvents lists j's events as kind@ms after the RFQ, with their messages.
func jobEvents(j *store.Job, rfqAt int64) string {
	var parts []string
	for _, ev := range j.Events {
		if ev.Kind == "bid" {
			continue // only the first bid is kept, and it says little here
		}
		e := fmt.Sprintf("%s@%d", ev.Kind, ev.AtMs-rfqAt)
		if ev.Message != "" {
			e += " (" + ev.Message + ")"
		}
		parts = append(parts, e)
	}
	return strings.Join(parts, ", ")
}

func benchAuction(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(b.Context(), 40*time.Minute)
	defer cancel()

	gpus := make([]string, *auctionGPUs)
	for i := range gpus {
		gpus[i] = "a10"
	}
	servePprof(b)
	stopProfile := startFormProfile(b, n)
	defer stopProfile()
	transport := *auctionTransport
	if transport == "mocknet" {
		transport = ""
	}
	boots := *auctionBootstraps
	if boots <= 0 {
		boots = (n + 99) / 100
	}
	// Forming has its own limit, so that a network that does not form
	// ends the run with a clear failure and the progress lines before it.
	formCtx, formCancel := context.WithTimeout(ctx, *auctionFormWait)
	defer formCancel()
	c, t0, rtReady := benchCluster(b, formCtx, n, transport, boots, func(i int, cfg *node.Config) {
		// The production cache of capacity records, not nodetest's
		// always-fresh one: the renter's market view (which providers it
		// expects bids from) should cost what it costs in production.
		cfg.Market.Refresh = node.DefaultConfig(node.RoleRenter).Market.Refresh
		if !*auctionBenchLimits {
			// The connection manager as deployed (64/192, a minute's
			// grace), not BenchmarkNetwork's tight 16/32 with none, which
			// churns connections through the DHT on a network this small.
			cfg.P2P.ConnLow, cfg.P2P.ConnHigh = *auctionConnLow, *auctionConnHigh
			cfg.P2P.ConnGrace = node.DefaultConfig(cfg.Role).P2P.ConnGrace
		}
		if cfg.GPU.Sim.Profiles != nil {
			// A losing bid holds its GPU until the award summary (or its
			// expiry, window + 3 s): 16 GPUs keep every provider able to
			// bid on every job at one job per auctionbench.pace.
			cfg.GPU.Sim.Profiles = gpus
		}
	})
	renterIdx := len(c.Members) - 1
	renter := c.Members[renterIdx].Node
	providers := c.ByRole(node.RoleProvider)
	shard := auction.GPUShard("a10")
	progress("nodes=%d: routing tables ready after %s", n, rtReady.Round(time.Millisecond))
	stopForming := reportForming(n, c)
	defer stopForming()
	arrivals := &rfqArrivals{at: map[string][]time.Time{}}
	pr := newProber(b, ctx, c, uint64(n)+7, shard.RFQTopic(), shardProbeSpec, arrivals.add)
	progress("nodes=%d: every provider subscribed the probes after %s", n, time.Since(t0).Round(time.Millisecond))
	pr.waitMesh(b, formCtx)
	stopForming()
	formed := time.Since(t0)
	stopProfile()
	progress("nodes=%d: formed after %s; record checks by where the record came from: %v; asks of peers by outcome: %v", n, formed.Round(time.Millisecond),
		labelSums(c, "idlegrid_trust_record_checks_total", "via"), labelSums(c, "idlegrid_trust_record_asks_total", "outcome"))
	// The renter expects bids from the backed providers its digest book holds.
	view := waitView(ctx, c.Members[renterIdx], len(providers))
	marketReady := time.Since(t0)
	progress("nodes=%d: the renter's market view after %s: %s; %s", n, marketReady.Round(time.Millisecond), view, churn(c))

	var timings []auctionTiming
	var rfqLat []time.Duration // real RFQs: publish (ms) to arrival at each provider
	unfilled, k, publishTimeouts := 0, 0, 0
	busy0 := cpuBusy()
	cost0 := readGossipCost(c, shard)
	for b.Loop() {
		var last time.Time
		for range *auctionJobs {
			time.Sleep(time.Until(last.Add(*auctionPace)))
			last = time.Now()
			k++
			j, err := renter.Renter().Submit(benchJob(k))
			if err != nil {
				b.Fatalf("submit job %d: %v", k, err)
			}
			id := j.ID
			if err := WaitFor(ctx, "job "+j.Name+" leased", func() bool {
				j, err = renter.Store().GetJob(id)
				return err == nil && (j.State != lease.JobAuctioning || slices.ContainsFunc(j.Events, func(ev store.JobEvent) bool { return ev.Kind == "lease" }))
			}); err != nil {
				b.Fatal(err)
			}
			if !slices.ContainsFunc(j.Events, func(ev store.JobEvent) bool { return ev.Kind == "lease" }) {
				unfilled++
				b.Logf("job %s ended %s without a lease: %s", j.Name, j.State, j.Reason)
			} else {
				t, rfqAt, err := jobTiming(j)
				if err != nil {
					b.Fatal(err)
				}
				timings = append(timings, t)
				if t.award > slowAward {
					progress("job %s: award round trip %s; its events from the RFQ: %s", j.Name, t.award, jobEvents(j, rfqAt))
				}
				for _, at := range arrivals.get(j.RFQs[0]) {
					rfqLat = append(rfqLat, at.Sub(time.UnixMilli(rfqAt)))
				}
			}
			// Gossip probes in the same network state, between auctions
			// so that neither waits for the other.
			var sent []uint64
			for range *auctionProbes {
				s, err := pr.publish(ctx, kindMeasure)
				if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
					// The publisher's event loop kept the publish past its
					// 10 s: a measurement of the saturated cores, not a
					// failure of the run. The probe is not measured.
					publishTimeouts++
					pr.rec.drop(s)
					progress("job %s: a probe publish timed out: %v", j.Name, err)
					continue
				}
				if err != nil {
					b.Fatalf("publish: %v", err)
				}
				sent = append(sent, s)
				time.Sleep(*benchEvery)
			}
			if err := pr.waitDelivered(ctx, sent); err != nil {
				b.Fatal(err)
			}
		}
	}
	cost := readGossipCost(c, shard).since(cost0)
	cpu := cpuBusy().since(busy0)

	// A renter that joins the running network with an empty store: its
	// view comes from digest sync and gossip.
	if err := c.Restart(renterIdx); err != nil {
		b.Fatal(err)
	}
	fresh := c.Members[renterIdx].Node
	if err := fresh.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	joined := time.Now()
	fview := waitView(ctx, c.Members[renterIdx], len(providers))
	freshView := time.Since(joined)
	progress("nodes=%d: %d jobs done; the fresh renter's view %s after it was ready: %s", n, k, freshView.Round(time.Millisecond), fview)

	sorted := func(f func(auctionTiming) time.Duration) []time.Duration {
		var out []time.Duration
		for _, t := range timings {
			out = append(out, f(t))
		}
		slices.Sort(out)
		return out
	}
	award := sorted(func(t auctionTiming) time.Duration { return t.total })
	toBid := sorted(func(t auctionTiming) time.Duration { return t.rfqToBid })
	roundTrip := sorted(func(t auctionTiming) time.Duration { return t.award })
	slices.Sort(rfqLat)
	lat, ratio := pr.rec.result()
	early, bids := 0, 0
	for _, t := range timings {
		bids += t.bids
		if t.early {
			early++
		}
	}
	gossipP95 := percentile(lat, 0.95)
	b.ReportMetric(formed.Seconds(), "formed_s")
	b.ReportMetric(marketReady.Seconds(), "market_s")
	b.ReportMetric(freshView.Seconds(), "fresh_view_s")
	b.ReportMetric(float64(view.counts.Backed), "market_backed")
	b.ReportMetric(float64(fview.counts.Backed), "fresh_view_backed")
	b.ReportMetric(float64(unfilled), "unfilled")
	b.ReportMetric(ms(percentile(award, 0.50)), "award_p50_ms")
	b.ReportMetric(ms(percentile(award, 0.95)), "award_p95_ms")
	b.ReportMetric(ms(percentile(award, 1)), "award_max_ms")
	b.ReportMetric(ms(percentile(toBid, 0.50)), "rfq_to_bid_p50_ms")
	b.ReportMetric(ms(percentile(toBid, 0.95)), "rfq_to_bid_p95_ms")
	b.ReportMetric(ms(percentile(roundTrip, 0.50)), "award_rt_p50_ms")
	b.ReportMetric(ms(percentile(roundTrip, 0.95)), "award_rt_p95_ms")
	b.ReportMetric(ms(percentile(lat, 0.50)), "gossip_p50_ms")
	b.ReportMetric(ms(gossipP95), "gossip_p95_ms")
	b.ReportMetric(ms(percentile(rfqLat, 0.95)), "rfq_gossip_p95_ms")
	b.ReportMetric(ratio, "delivery_ratio")
	b.ReportMetric(float64(publishTimeouts), "probe_publish_timeouts")
	if len(timings) > 0 {
		b.ReportMetric(float64(bids)/float64(len(timings)), "bids/job")
		// The second half of the jobs alone: in a network as new as this
		// one every provider bids until it sees its peers proven (a
		// renter's summaries vouch for bidders only once it holds
		// receipts, auction/evidence.go), so the mean over all jobs mixes
		// that cold start with the steady state.
		late := timings[len(timings)/2:]
		lateBids := 0
		for _, t := range late {
			lateBids += t.bids
		}
		b.ReportMetric(float64(lateBids)/float64(len(late)), "bids/job_2nd_half")
		b.ReportMetric(float64(early)/float64(len(timings)), "early_close")
	}
	b.ReportMetric(cpu, "cpu_busy")
	cost.report(b)
	b.Logf("nodes=%d: %d jobs (%d unfilled), %d probe samples, %d rfq arrivals; rt ready %s, formed %s, market %s, fresh renter's view %s",
		n, k, unfilled, len(lat), len(rfqLat), rtReady.Round(time.Millisecond), formed.Round(time.Millisecond),
		marketReady.Round(time.Millisecond), freshView.Round(time.Millisecond))
	b.Logf("gossip cost: %s", cost)
	b.Logf("churn: %s", churn(c))
	// Honest providers that were in a prefix and missing from the RFQ's
	// summary (a late bid, a quote the digest could not show refusing):
	// each takes a step toward silence at the provider that noted it.
	misses, answers := counterSum(c, "idlegrid_trust_prefix_misses_total"), counterSum(c, "idlegrid_trust_prefix_answers_total")
	b.ReportMetric(misses, "prefix_misses")
	b.ReportMetric(answers, "prefix_answers")
	b.ReportMetric(counterSum(c, "idlegrid_trust_prefix_silenced_total"), "prefix_silenced")
	b.Logf("record checks by where the record came from: %v; asks of peers by outcome: %v",
		labelSums(c, "idlegrid_trust_record_checks_total", "via"), labelSums(c, "idlegrid_trust_record_asks_total", "outcome"))
	// Every node here is honest, so every abuse charge is one honest node
	// penalising another: a false positive of some rule, under this load.
	charges := labelSums(c, "idlegrid_p2p_abuse_events_total", "reason")
	var charged float64
	for _, v := range charges {
		charged += v
	}
	b.ReportMetric(charged, "abuse_charges")
	b.Logf("abuse charges between honest nodes, by reason: %v; RFQs dropped at the gossip edge, by reason: %v",
		charges, labelSums(c, "idlegrid_trust_rfqs_dropped_total", "reason"))
	b.Logf("award ms per job: %v", msList(award))
	perJob := make([]int, len(timings))
	var everyone []int
	for i, t := range timings {
		perJob[i] = t.bids
		if t.askedEveryone {
			everyone = append(everyone, i+1)
		}
	}
	// In job order: whether the count falls as the renter sees more of the
	// providers bid (newcomers, auction/bidselect.go), and which jobs
	// asked everyone after their expected bidders stayed silent.
	b.Logf("bids per job, in order: %v; jobs that asked every provider after silence: %v", perJob, everyone)
	if ratio != 1 {
		b.Fatalf("probe delivery ratio %.4f, want 1", ratio)
	}
}

// reportForming tells a -v run, every 20 s until it is stopped, how many
// connections the members hold and why they closed others: the waits of
// formation read pubsub's event loops, which can be minutes behind, and
// would otherwise leave a stalled run silent.
func reportForming(n int, c *Cluster) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mean, most := connStats(c)
				progress("nodes=%d: forming; connections per node %.1f (most %d); closed by reason: %s", n, mean, most, connsClosed(c))
			}
		}
	}()
	return sync.OnceFunc(func() { close(done) })
}

// churn sums what the cluster's connections went through: redials,
// evictions by admission, gossip peers reconnected by the heal loop.
func churn(c *Cluster) string {
	s := counterSums(c, "idlegrid_p2p_redials_total", "idlegrid_p2p_conn_refusals_total",
		"idlegrid_gossip_healed_peers_total")
	return fmt.Sprintf("redials %.0f, admission evictions %.0f, gossip peers healed %.0f, identify asked again %v, connections per node %.1f, connections closed by reason: %s",
		s[0], s[1], s[2], labelSums(c, "idlegrid_p2p_identify_reasked_total", "result"), func() float64 { m, _ := connStats(c); return m }(), connsClosed(c))
}

// progress tells a -v run how far a long benchmark has come, as it goes
// (b.Logf prints only when the benchmark ends).
func progress(format string, args ...any) {
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format(time.TimeOnly)}, args...)...)
	}
}

func msList(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}
