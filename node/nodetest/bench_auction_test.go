package nodetest

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Auction benchmark parameters; the network flags (netbench.latency,
// .heartbeat, .connlow, .connhigh, .every) apply as well.
var (
	auctionJobs   = flag.Int("auctionbench.jobs", 40, "jobs per benchmark iteration, one at a time")
	auctionProbes = flag.Int("auctionbench.probes", 4, "gossip probes after each job's lease, netbench.every apart")
	auctionGPUs   = flag.Int("auctionbench.gpus", 16, "simulated A10s per provider")
	auctionPace   = flag.Duration("auctionbench.pace", 500*time.Millisecond,
		"least time between two job submissions")
)

// BenchmarkAuction measures how long the reverse auction itself takes on
// an in-process network, leaving out the bid window a renter chooses:
//
//	award = (first bid received - RFQ published) + (lease countersigned - bid window closed)
//
// from the renter's job events, with the gossip latency of the same run
// beside it (RFQ-shaped probes, as in BenchmarkNetwork, interleaved with
// the jobs). Jobs go one at a time, at most one per auctionbench.pace,
// so that they never compete for GPUs.
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkAuction -benchtime=1x -timeout 30m
func BenchmarkAuction(b *testing.B) {
	if testing.Short() {
		b.Skip("auction benchmark skipped in -short mode")
	}
	for _, n := range []int{50, 200} {
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

func benchAuction(b *testing.B, n int) {
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Minute)
	defer cancel()

	gpus := make([]string, *auctionGPUs)
	for i := range gpus {
		gpus[i] = "a10"
	}
	c, t0, rtReady := benchCluster(b, ctx, n, func(i int, cfg *node.Config) {
		// The production cache of capacity records, not nodetest's
		// always-fresh one: the renter's market view (which providers it
		// expects bids from) should cost what it costs in production.
		cfg.Market.Refresh = node.DefaultConfig(node.RoleRenter).Market.Refresh
		if cfg.GPU.Sim.Profiles != nil {
			// Every provider bids on every job, and a losing bid holds its
			// GPU until it expires (window + 3 s, 3.5 s here): at one job
			// per auctionbench.pace that is 7 holds per provider, plus
			// the winner's 1 s leases. 16 GPUs keep every provider able to
			// bid on every job.
			cfg.GPU.Sim.Profiles = gpus
		}
	})
	renter := c.ByRole(node.RoleRenter)[0].Node
	providers := c.ByRole(node.RoleProvider)
	arrivals := &rfqArrivals{at: map[string][]time.Time{}}
	pr := newProber(b, ctx, c, uint64(n)+7, arrivals.add)
	pr.waitMesh(b, ctx)
	meshReady := time.Since(t0)
	// Every provider's capacity record must be found before the renter
	// can expect its bid.
	if err := WaitSearchable(ctx, renter, len(providers)); err != nil {
		b.Fatal(err)
	}
	marketReady := time.Since(t0)

	var timings []auctionTiming
	var rfqLat []time.Duration // real RFQs: publish (ms) to arrival at each provider
	k := 0
	busy0 := cpuBusy()
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
				for _, ev := range j.Events {
					b.Logf("  %s: %s", ev.Kind, ev.Message)
				}
				b.Fatalf("job %s ended %s without a lease: %s", j.Name, j.State, j.Reason)
			}
			t, rfqAt, err := jobTiming(j)
			if err != nil {
				b.Fatal(err)
			}
			timings = append(timings, t)
			for _, at := range arrivals.get(j.RFQs[0]) {
				rfqLat = append(rfqLat, at.Sub(time.UnixMilli(rfqAt)))
			}
			// Gossip probes in the same network state, between auctions
			// so that neither waits for the other.
			var sent []uint64
			for range *auctionProbes {
				s, err := pr.publish(ctx, kindMeasure)
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
	cpu := cpuBusy().since(busy0)

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
	if gossipP95 > 0 {
		b.ReportMetric(float64(percentile(award, 0.95))/float64(gossipP95), "ratio")
	}
	b.ReportMetric(ratio, "delivery_ratio")
	b.ReportMetric(float64(bids)/float64(len(timings)), "bids/job")
	b.ReportMetric(float64(early)/float64(len(timings)), "early_close")
	b.ReportMetric(cpu, "cpu_busy")
	b.Logf("nodes=%d: %d jobs, %d probe samples, %d rfq arrivals, rt ready %s, mesh ready %s, market ready %s",
		n, len(timings), len(lat), len(rfqLat), rtReady.Round(time.Millisecond), meshReady.Round(time.Millisecond), marketReady.Round(time.Millisecond))
	b.Logf("award ms per job: %v", msList(award))
	if ratio != 1 {
		b.Fatalf("probe delivery ratio %.4f, want 1", ratio)
	}
}

func msList(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}
