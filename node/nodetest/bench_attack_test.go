package nodetest

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
	"github.com/idlegrid/idlegrid/store"
)

// Attack benchmark parameters.
var (
	attackHostiles = flag.Int("attackbench.hostiles", 10, "hostile identities flooding at once")
	attackRate     = flag.Float64("attackbench.rate", 100, "messages per second from each hostile identity")
	attackJobs     = flag.Int("attackbench.jobs", 20, "jobs per phase (baseline, then under attack), one at a time")
)

// BenchmarkAuctionUnderAttack measures honest award latency (as in
// BenchmarkAuction: first bid after the RFQ plus the award round trip) on
// a small loopback TCP cluster (bootstrap, 4 providers, renter), first
// with no attack, then while attackbench.hostiles identities flood every
// provider's RFQ topic with validly signed RFQs no honest relay forwards
// (expired an hour ago, dated ten minutes ahead) at attackbench.rate
// each. A banned identity is replaced by a fresh one at once, as a
// determined attacker would. Reported: award p50/p95 of both phases, the
// messages and identities the attack used, how long an identity lasted
// until every provider had banned it, jobs that went unfilled, and
// hostile RFQs delivered (must be 0).
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkAuctionUnderAttack -benchtime=1x -timeout 20m
func BenchmarkAuctionUnderAttack(b *testing.B) {
	if testing.Short() {
		b.Skip("attack benchmark skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
	defer cancel()
	c := New(b, 6, Options{Transport: "tcp", Configure: func(i int, cfg *node.Config) {
		cfg.Market.GoldNeedsBadge = false
		if cfg.GPU.Sim.Profiles != nil {
			// Losing bids hold a GPU until they expire: enough GPUs that
			// every provider bids on every job.
			cfg.GPU.Sim.Profiles = slices.Repeat([]string{"a10"}, 16)
		}
	}})
	if err := c.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	renter := c.ByRole(node.RoleRenter)[0].Node
	providers := c.ByRole(node.RoleProvider)
	if err := WaitFor(ctx, "every provider's record to be searchable", func() bool {
		res, err := renter.Trust().Search(ctx, "", "", 0, false)
		return err == nil && len(res.Offers) == len(providers)
	}); err != nil {
		b.Fatal(err)
	}
	var topic string
	for _, t := range providers[0].Node.P2P().JoinedTopics() {
		if strings.HasPrefix(t, "idlegrid/rfq/") {
			topic = t
		}
	}

	k := 0
	for b.Loop() {
		base, baseUnfilled := runJobs(b, ctx, renter, &k, *attackJobs)
		atk := startAttack(ctx, providers, topic, *attackHostiles, *attackRate)
		under, underUnfilled := runJobs(b, ctx, renter, &k, *attackJobs)
		st := atk.stop()

		delivered := 0
		for _, m := range providers {
			for _, msg := range m.Node.RecentGossip(topic) {
				if _, author, err := auction.OpenRFQ(msg.Data); err != nil || atk.has(author) {
					delivered++
				}
			}
		}
		slices.Sort(st.lasted)
		b.ReportMetric(ms(percentile(base, 0.50)), "base_award_p50_ms")
		b.ReportMetric(ms(percentile(base, 0.95)), "base_award_p95_ms")
		b.ReportMetric(ms(percentile(under, 0.50)), "attack_award_p50_ms")
		b.ReportMetric(ms(percentile(under, 0.95)), "attack_award_p95_ms")
		if p95 := percentile(base, 0.95); p95 > 0 {
			b.ReportMetric(float64(percentile(under, 0.95))/float64(p95), "p95_ratio")
		}
		b.ReportMetric(float64(baseUnfilled), "base_unfilled")
		b.ReportMetric(float64(underUnfilled), "attack_unfilled")
		b.ReportMetric(st.rate, "attack_msg/s")
		b.ReportMetric(float64(st.identities), "identities")
		b.ReportMetric(float64(len(st.lasted)), "banned")
		b.ReportMetric(ms(percentile(st.lasted, 0.95)), "ban_p95_ms")
		b.ReportMetric(ms(percentile(st.lasted, 1)), "ban_max_ms")
		b.ReportMetric(float64(delivered), "hostile_delivered")
		b.Logf("baseline award ms: %v", msList(base))
		b.Logf("under attack award ms: %v", msList(under))
		b.Logf("attack: %d messages in %s from %d identities, %d banned by every provider", st.sent, st.took.Round(time.Millisecond), st.identities, len(st.lasted))
	}
}

// runJobs posts n benchmark jobs one at a time (500 ms apart at least)
// and returns the award latencies of those leased, sorted, and how many
// went unfilled (no bid within the window).
func runJobs(b *testing.B, ctx context.Context, renter *node.Node, k *int, n int) (out []time.Duration, unfilled int) {
	b.Helper()
	var last time.Time
	for range n {
		time.Sleep(time.Until(last.Add(500 * time.Millisecond)))
		last = time.Now()
		*k++
		j, err := renter.Renter().Submit(benchJob(*k))
		if err != nil {
			b.Fatalf("submit job %d: %v", *k, err)
		}
		id := j.ID
		leased := func(j *store.Job) bool {
			return slices.ContainsFunc(j.Events, func(ev store.JobEvent) bool { return ev.Kind == "lease" })
		}
		if err := WaitFor(ctx, "job "+j.Name+" leased", func() bool {
			j, err = renter.Store().GetJob(id)
			return err == nil && (j.State != lease.JobAuctioning || leased(j))
		}); err != nil {
			b.Fatal(err)
		}
		if !leased(j) {
			b.Logf("job %s ended %s without a lease: %s", j.Name, j.State, j.Reason)
			unfilled++
			continue
		}
		t, _, err := jobTiming(j)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, t.total)
	}
	slices.Sort(out)
	return out, unfilled
}

// attack keeps n hostile identities flooding the providers, replacing
// each one once every provider has banned it.
type attack struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  time.Time
	sent   atomic.Int64

	mu         sync.Mutex
	ids        map[peer.ID]bool
	lasted     []time.Duration // connect to banned everywhere, per banned identity
	identities int
}

type attackStats struct {
	sent       int64
	took       time.Duration
	rate       float64
	identities int
	lasted     []time.Duration
}

func startAttack(ctx context.Context, providers []*Member, topic string, n int, rate float64) *attack {
	ctx, cancel := context.WithCancel(ctx)
	a := &attack{cancel: cancel, start: time.Now(), ids: map[peer.ID]bool{}}
	for range n {
		a.wg.Go(func() {
			for ctx.Err() == nil {
				a.oneIdentity(ctx, providers, topic, rate)
			}
		})
	}
	return a
}

// oneIdentity floods with one fresh identity until every provider has
// banned it or ctx ends.
func (a *attack) oneIdentity(ctx context.Context, providers []*Member, topic string, rate float64) {
	h, err := hostile.New()
	if err != nil {
		return
	}
	defer func() { _ = h.Close() }()
	a.mu.Lock()
	a.ids[h.ID()] = true
	a.identities++
	a.mu.Unlock()
	gen := untimelyRFQGen(h.Host().Peerstore().PrivKey(h.ID()), 400)
	t0 := time.Now()
	for _, m := range providers {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = h.Connect(cctx, peer.AddrInfo{ID: m.Node.ID(), Addrs: []ma.Multiaddr{m.Addr}})
		_ = h.WaitTopicPeer(cctx, topic, m.Node.ID())
		cancel()
	}
	banned := func() bool {
		for _, m := range providers {
			if !m.Node.P2P().Blocked(h.ID()) {
				return false
			}
		}
		return true
	}
	sent, _ := h.Spam(ctx, topic, 1<<30, rate, gen, banned)
	a.sent.Add(int64(sent))
	if banned() {
		a.mu.Lock()
		a.lasted = append(a.lasted, time.Since(t0))
		a.mu.Unlock()
	}
}

func (a *attack) has(p peer.ID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ids[p]
}

func (a *attack) stop() attackStats {
	took := time.Since(a.start)
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return attackStats{
		sent: a.sent.Load(), took: took, rate: float64(a.sent.Load()) / took.Seconds(),
		identities: a.identities, lasted: slices.Clone(a.lasted),
	}
}

// untimelyRFQGen builds n distinct validly signed RFQs from key, half
// expired an hour ago and half dated ten minutes ahead, and cycles them.
func untimelyRFQGen(key crypto.PrivKey, n int) func(int) []byte {
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		panic(err)
	}
	spec, err := auction.ParseJobSpec(benchJob(0))
	if err != nil {
		panic(err)
	}
	now := time.Now()
	msgs := make([][]byte, n)
	for i := range msgs {
		issued := now.Add(-time.Hour)
		if i%2 == 1 {
			issued = now.Add(10 * time.Minute)
		}
		rfq, err := spec.RFQ(id, fmt.Appendf(nil, "attack-%09d", i), issued)
		if err != nil {
			panic(err)
		}
		if msgs[i], err = auction.SealRFQ(rfq, key); err != nil {
			panic(err)
		}
	}
	return func(i int) []byte { return msgs[i%n] }
}
