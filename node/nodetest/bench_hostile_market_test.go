package nodetest

import (
	"context"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
)

var hostileJobs = flag.Int("hostilebench.jobs", 20, "honest jobs per phase of BenchmarkHostileMarket, one at a time")

// BenchmarkHostileMarket measures issue 23's attacks on the small market
// of hostile_market_test.go (bootstrap, three A10 providers, one T4
// provider, a renter, on mocknet), each against a baseline of the same
// run: hostilebench.jobs honest one-GPU jobs one at a time (A10 and no
// model, alternating), with no attack and then under each attack in turn.
// Reported per attack: jobs leased of jobs posted, award p50/p95 (first
// bid after the RFQ plus the award round trip) and their ratio to the
// baseline's, the dearest price paid (the honest price is $0.50), CPU of
// the whole process during the phase (every node and the attacker), and
// for the sybil digests the time from the attack's end to the lease of a
// job posted then.
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkHostileMarket -benchtime=1x -timeout 20m
func BenchmarkHostileMarket(b *testing.B) {
	if testing.Short() {
		b.Skip("hostile market benchmark skipped in -short mode")
	}
	for b.Loop() {
		ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
		m := newHostileMarket(b, ctx)
		for range 2 { // the renter learns who bids
			m.job(b, ctx, "a10")
		}
		base := m.phase(b, ctx)
		base.report(b, "base", phaseResult{})

		topic := auction.GPUShard("a10").DigestTopic()
		var attackers []*hostile.Attacker
		for i := range 4 {
			a := m.attacker(b, ctx, i, nil)
			for _, mem := range append(slices.Clone(m.providers[:3]), m.renter) {
				if err := a.WaitTopicPeer(ctx, topic, mem.Node.ID()); err != nil {
					b.Fatal(err)
				}
			}
			attackers = append(attackers, a)
		}
		keys, raws := sybilDigests(b, 200, time.Now())
		sybils := m.phaseWith(b, ctx, func() {
			for i, raw := range raws {
				_ = attackers[i%len(attackers)].PublishAs(ctx, topic, keys[i], raw)
			}
		})
		for _, a := range attackers {
			_ = a.Close()
		}
		stopped := time.Now()
		recovery := m.job(b, ctx, "").leasedAt.Sub(stopped)
		sybils.report(b, "sybil", base)
		b.ReportMetric(ms(recovery), "sybil_recovery_ms")

		src := newSybilSyncSource(b, 512)
		var syncer *hostile.Attacker
		var syncAt time.Time
		sync := m.phaseWith(b, ctx, func() { syncer, syncAt = m.attacker(b, ctx, 7, src.serve), time.Now() })
		sync.report(b, "sync", base)
		if err := WaitFor(ctx, "the sync source banned", func() bool { return m.renter.Node.P2P().Blocked(syncer.ID()) }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(ms(time.Since(syncAt)), "sync_source_banned_after_ms")
		b.ReportMetric(float64(src.pagesTo(m.renter.Node.ID())), "sync_pages_to_renter")

		var churn *rfqChurn
		rfqs := m.phaseWith(b, ctx, func() { churn = startRFQChurn(b, ctx, m, auction.GPUShard("a10").RFQTopic(), 2, 200) })
		sent, took := churn.stop()
		rfqs.report(b, "rfq_churn", base)
		v := verdicts(m.providers[0], auction.GPUShard("a10").RFQTopic())
		b.ReportMetric(float64(sent)/took.Seconds(), "rfq_churn_msg/s")
		b.ReportMetric(v["accept"], "rfq_churn_accepted_by_cheapest")
		b.ReportMetric(v["withhold"], "rfq_churn_withheld_by_cheapest")

		before := indexMedian(b, m)
		f := m.attacker(b, ctx, 9, nil)
		if err := f.WaitTopicPeer(ctx, a10Attest, m.renter.Node.ID()); err != nil {
			b.Fatal(err)
		}
		forged, cosigned := forgedSummaries(b, 50, 2_400_000)
		for _, s := range slices.Concat(cosigned, forged) {
			_ = f.PublishAs(ctx, a10Attest, s.key, s.raw)
		}
		time.Sleep(5 * time.Second) // the summaries spread; nothing waits on them
		b.ReportMetric(100*(float64(indexMedian(b, m))/float64(before)-1), "forged_median_move_%")
		cancel()
	}
}

// phaseResult is one phase's honest jobs.
type phaseResult struct {
	jobs   []hostileJob
	awards []time.Duration // sorted
	cpu    time.Duration
	dear   uint64
}

// phase posts hostilebench.jobs jobs, A10 and no model alternating.
func (m *hostileMarket) phase(tb testing.TB, ctx context.Context) phaseResult {
	return m.phaseWith(tb, ctx, nil)
}

// phaseWith starts an attack (start, may be nil) and posts the jobs.
func (m *hostileMarket) phaseWith(tb testing.TB, ctx context.Context, start func()) phaseResult {
	tb.Helper()
	var r phaseResult
	cpu := cpuNow()
	if start != nil {
		start()
	}
	for i := range *hostileJobs {
		model := "a10"
		if i%2 == 1 {
			model = ""
		}
		j := m.job(tb, ctx, model)
		r.jobs = append(r.jobs, j)
		if j.leased {
			r.awards = append(r.awards, j.timing.total)
			r.dear = max(r.dear, j.price)
		} else {
			tb.Logf("job %s (model %q) not leased: %s", j.name, model, j.reason)
		}
	}
	r.cpu = cpuNow() - cpu
	slices.Sort(r.awards)
	return r
}

func (r phaseResult) report(b *testing.B, name string, base phaseResult) {
	b.ReportMetric(float64(len(r.awards)), name+"_leased")
	b.ReportMetric(float64(len(r.jobs)), name+"_posted")
	b.ReportMetric(ms(percentile(r.awards, 0.50)), name+"_award_p50_ms")
	b.ReportMetric(ms(percentile(r.awards, 0.95)), name+"_award_p95_ms")
	if p95 := percentile(base.awards, 0.95); p95 > 0 {
		b.ReportMetric(float64(percentile(r.awards, 0.95))/float64(p95), name+"_p95_ratio")
	}
	b.ReportMetric(float64(r.dear)/1e6, name+"_dearest_usd")
	b.ReportMetric(r.cpu.Seconds(), name+"_cpu_s")
	b.Logf("%s: %d of %d leased, award ms %v, dearest $%.2f, CPU %s", name, len(r.awards), len(r.jobs), msList(r.awards), float64(r.dear)/1e6, r.cpu.Round(time.Millisecond))
}

// indexMedian is the renter's median cleared A10 bronze price.
func indexMedian(tb testing.TB, m *hostileMarket) uint64 {
	tb.Helper()
	stats, err := m.renter.Node.Trust().PriceIndex(time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range stats {
		if auction.GPUFamily(s.Model) == "a10" && s.Tier == auction.TierBronze {
			return s.MedianMicro
		}
	}
	return 0
}
