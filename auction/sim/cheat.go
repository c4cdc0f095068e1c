package sim

import (
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// Cheaters and canary runs (issue 24). A cheating provider returns a
// wrong result for a share of its leases: exit 0, paid, and to the renter
// indistinguishable from a right one. The renter re-runs a share of its
// completed jobs on a second provider, as the node's market.canary_rate
// does (node/renter/canary.go): only a job that ran on one lease, the
// n-th such job when auction.CanaryDue(n, rate) says so, avoiding the
// first provider, paid like any job. Outputs that differ mean a lie; the
// re-run that proves it (attest's wrong-result proof) names the provider
// whose output differs from the honest one, and every node excludes it
// Config.ExclusionDelay later: it wins no award after that. Two wrong
// outputs differ from each other and from the re-run, so they prove
// nothing; the renter keeps neither. The replay treats every job as
// deterministic (WASM, no network): the traces do not say, and the rule
// is what is measured.

// Defaults of the cheating model.
const (
	DefaultCheatRate      = 0.2
	DefaultExclusionDelay = 10 * time.Second
)

// warmupJobs is how many of the renter's first jobs the "after" metrics
// leave out: the time it takes canaries to catch the cheaters.
const warmupJobs = 200

// cheatDraw is whether p's lease of attempt a of j returns a wrong result:
// a hash of the seed and the three, like failDraw, so every policy meets
// the same lies for the same choice.
func (w *World) cheatDraw(j *jobState, p *provider) bool {
	if !p.cheater {
		return false
	}
	salt := uint64(0xc4ea7)
	if j.canaryOf != nil {
		salt = 0xca4a7
	}
	h := splitmix(w.seed ^ splitmix(uint64(j.ID)<<20^uint64(j.attempt)<<8^salt) ^ splitmix(uint64(p.idx)+0x7f4a))
	return float64(h>>11)/(1<<53) < w.cfg.CheatRate
}

// excluded reports whether a wrong-result proof has excluded p by now.
func (p *provider) excluded(now int64) bool { return p.excludedAt >= 0 && now >= p.excludedAt }

// finished takes a run that ended well: a canary's is compared with its
// origin's, and a job of the renter's own may be due a canary.
func (r *replay) finished(run []*lease) {
	j := run[0].job
	j.liars = j.liars[:0]
	for _, l := range run {
		if l.wrong {
			j.liars = append(j.liars, l.prov)
		}
	}
	j.wrong = len(j.liars) > 0
	j.onCheater = slices.ContainsFunc(run, func(l *lease) bool { return r.w.provs[l.prov].cheater })
	if j.canaryOf != nil {
		r.compare(j.canaryOf, j)
		return
	}
	if len(run) != 1 {
		return // the node canaries only jobs that ran on one lease
	}
	n := r.deterministic
	r.deterministic++
	if !auction.CanaryDue(n, r.w.cfg.CanaryRate) {
		return
	}
	w := r.w
	c := &jobState{
		Job: j.Job, arrival: w.now, deadline: w.now + r.firstWait,
		allowed: j.allowed, maxPrice: j.maxPrice, order: j.order, canaryOf: j, avoid: []int{run[0].prov},
	}
	r.canaries = append(r.canaries, c)
	r.enqueue(c)
}

// compare is the renter's check of origin o against its canary c. Equal
// outputs (both right) settle nothing; otherwise the one wrong side is
// proven and its liars excluded.
func (r *replay) compare(o, c *jobState) {
	switch {
	case !o.wrong && !c.wrong:
	case o.wrong && !c.wrong:
		o.rejected = true // the renter keeps the canary's output
		r.exclude(o.liars)
	case !o.wrong && c.wrong:
		r.exclude(c.liars)
	default:
		o.rejected = true // two wrong outputs: not provable, neither kept
	}
}

// exclude schedules the exclusion of providers proven to have lied.
func (r *replay) exclude(liars []int) {
	for _, i := range liars {
		if p := r.w.provs[i]; p.excludedAt < 0 {
			p.excludedAt = r.w.now + int64(r.w.cfg.ExclusionDelay/time.Second)
		}
	}
}

// cheatMetrics fills m's cheating and canary fields; paid is what the
// renter paid in all and canaryUSD its canary leases' share.
func (r *replay) cheatMetrics(m *Metrics, paid, canaryUSD float64) {
	for _, p := range r.w.provs {
		if p.cheater {
			m.Cheaters++
			if p.excludedAt >= 0 {
				m.Caught++
			}
		}
	}
	m.Canaries = len(r.canaries)
	m.CanaryUSD = canaryUSD
	if own := paid - canaryUSD; own > 0 {
		m.CanaryShare = canaryUSD / own
	}
	var done, wrong, accepted, after, afterAccepted, onCheater int
	for _, j := range r.jobs {
		if !j.done {
			continue
		}
		done++
		if j.order >= warmupJobs {
			after++
		}
		if j.onCheater {
			onCheater++
		}
		if !j.wrong {
			continue
		}
		wrong++
		if !j.rejected {
			accepted++
			if j.order >= warmupJobs {
				afterAccepted++
			}
		}
	}
	if done > 0 {
		m.WrongShare = float64(wrong) / float64(done)
		m.WrongAccepted = float64(accepted) / float64(done)
		m.CheaterWork = float64(onCheater) / float64(done)
	}
	if after > 0 {
		m.WrongAcceptedAfter = float64(afterAccepted) / float64(after)
	}
}
