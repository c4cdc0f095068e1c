package nodetest_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

var (
	abandonJobs = flag.Int("abandonbench.jobs", 12, "honest jobs per phase of BenchmarkAwardAndAbandon, one at a time")
	abandonKeys = flag.Int("abandonbench.keys", 3, "attacker renter keys of BenchmarkAwardAndAbandon, abandoning at once")
)

// BenchmarkAwardAndAbandon measures the award-and-abandon attack of issue
// 23 on the market of TestAwardAndAbandon (4 providers x 2 A10s, bronze
// $0.50): abandonbench.jobs honest one-GPU jobs one at a time with no
// attack, then again while abandonbench.keys attacker renters (each its
// own key and node) post RFQs for every GPU, award every bid and never
// serve a spec. Reported: honest jobs leased of posted, their time from
// the first RFQ to the lease (p50/p95, and the ratio to the baseline),
// how long providers held abandoned awards (accepted to released,
// max), and the awards accepted per attacker key.
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkAwardAndAbandon -benchtime=1x -timeout 20m
func BenchmarkAwardAndAbandon(b *testing.B) {
	if testing.Short() {
		b.Skip("award-and-abandon benchmark skipped in -short mode")
	}
	for b.Loop() {
		ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
		m := newAbandonMarket(b, ctx, *abandonKeys)
		for i := range 2 { // warm-up: the renter learns who bids
			m.honestJob(b, ctx, fmt.Sprintf("warm-%d", i))
		}
		base := m.honestPhase(b, ctx, "base")
		base.report(b, "base", nil)

		attackCtx, stopAttack := context.WithCancel(ctx)
		var atts []*abandoner
		done := make(chan struct{}, len(m.attackers))
		for _, a := range m.attackers {
			att := newAbandoner(b, attackCtx, a, abandonProviders*abandonGPUs)
			atts = append(atts, att)
			go func() {
				defer func() { done <- struct{}{} }()
				for attackCtx.Err() == nil {
					att.round(attackCtx)
					select {
					case <-attackCtx.Done():
					case <-time.After(300 * time.Millisecond):
					}
				}
			}()
		}
		attacked := m.honestPhase(b, ctx, "abandon")
		stopAttack()
		for range atts {
			<-done
		}
		attacked.report(b, "abandon", &base)

		var holds []time.Duration
		accepted := 0
		for i, att := range atts {
			acc, rounds := att.snapshot()
			accepted += len(acc)
			for _, a := range acc {
				if l, err := m.provByID[a.provider].Store().GetLease(a.lease); err == nil && lease.State(l.State).Terminal() {
					holds = append(holds, time.UnixMilli(l.UpdatedAtMs).Sub(a.at))
				}
			}
			b.Logf("attacker %d: %d rounds, %d awards accepted", i, rounds, len(acc))
		}
		slices.Sort(holds)
		b.ReportMetric(float64(accepted)/float64(len(atts)), "abandon_awards_accepted_per_key")
		if len(holds) > 0 {
			b.ReportMetric(ms(holds[len(holds)/2]), "abandon_hold_p50_ms")
			b.ReportMetric(ms(holds[len(holds)-1]), "abandon_hold_max_ms")
		}
		b.Logf("abandoned awards held (accepted to released): %v", msList(holds))
		cancel()
	}
}

// honestResult is one phase's honest jobs.
type honestResult struct {
	posted int
	leased []time.Duration // first RFQ to lease, sorted
	notes  []string        // why jobs were not leased
}

func (m *abandonMarket) honestPhase(tb testing.TB, ctx context.Context, name string) honestResult {
	tb.Helper()
	var r honestResult
	for i := range *abandonJobs {
		r.posted++
		d, why := m.honestJob(tb, ctx, fmt.Sprintf("%s-%02d", name, i))
		if why != "" {
			r.notes = append(r.notes, why)
			continue
		}
		r.leased = append(r.leased, d)
	}
	slices.Sort(r.leased)
	return r
}

// honestJob posts one one-GPU bronze A10 job and waits until it leased
// (the time from its first RFQ to the lease) or ended without a lease
// (why).
func (m *abandonMarket) honestJob(tb testing.TB, ctx context.Context, name string) (time.Duration, string) {
	tb.Helper()
	j, err := m.honest.Renter().Submit(jobYAML(jobOpts{name: name, gpus: 1, duration: "1s"}))
	if err != nil {
		tb.Fatal(err)
	}
	at := func(j *store.Job, kind string) int64 {
		for _, ev := range j.Events {
			if ev.Kind == kind {
				return ev.AtMs
			}
		}
		return 0
	}
	id := j.ID
	if err := nodetest.WaitFor(ctx, "job "+name+" leased or ended", func() bool {
		j, err = m.honest.Store().GetJob(id)
		return err == nil && (at(j, "lease") != 0 || lease.JobState(j.State).Terminal())
	}); err != nil {
		tb.Fatal(err)
	}
	if at(j, "lease") == 0 {
		return 0, j.State + ": " + j.Reason
	}
	return time.Duration(at(j, "lease")-at(j, "rfq")) * time.Millisecond, ""
}

func (r honestResult) report(b *testing.B, name string, base *honestResult) {
	b.ReportMetric(float64(len(r.leased)), name+"_leased")
	b.ReportMetric(float64(r.posted), name+"_posted")
	if len(r.leased) == 0 {
		b.Logf("%s: none of %d leased: %v", name, r.posted, r.notes)
		return
	}
	p50, p95 := pct(r.leased, 0.5), pct(r.leased, 0.95)
	b.ReportMetric(ms(p50), name+"_lease_p50_ms")
	b.ReportMetric(ms(p95), name+"_lease_p95_ms")
	if base != nil && len(base.leased) > 0 {
		b.ReportMetric(float64(p95)/float64(pct(base.leased, 0.95)), name+"_p95_ratio")
	}
	b.Logf("%s: %d of %d leased, RFQ to lease ms %v; not leased: %v", name, len(r.leased), r.posted, msList(r.leased), r.notes)
}

// pct is the nearest-rank percentile of sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msList(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}
