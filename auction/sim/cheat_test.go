package sim

import (
	"math"
	"slices"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// cheating is the synthetic market with a fifth of providers lying on
// 30% of their leases. Its jobs take one GPU, so every one can be
// canaried (the node canaries only jobs on one lease).
func cheating(canary float64) Config {
	cfg := synthetic(1500, 40, 1.6) // 0.8 of the GPUs with one-GPU jobs
	for i := range cfg.Jobs {
		cfg.Jobs[i].GPUs = 1
	}
	cfg.CheaterShare, cfg.CheatRate, cfg.CanaryRate = 0.2, 0.3, canary
	cfg.Policies = []string{PolicyIdlegrid, PolicyGreedy}
	return cfg
}

func TestCheatersWithoutCanaries(t *testing.T) {
	res, err := Run(cheating(0))
	if err != nil {
		t.Fatal(err)
	}
	honest := cheating(0)
	honest.CheaterShare = 0
	base, err := Run(honest)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range res.Runs {
		if m.Cheaters == 0 || m.CheaterWork == 0 {
			t.Fatalf("%s seed %d: %d cheaters with %v of the work: the test needs some", m.Policy, m.Seed, m.Cheaters, m.CheaterWork)
		}
		// Nothing catches a lie: the renter keeps every wrong result, and
		// that is the cheat rate of the cheaters' share of the work.
		want := 0.3 * m.CheaterWork
		done := float64(len(honest.Jobs)) * (1 - m.Unplaced)
		if tol := 4 * math.Sqrt(want*(1-want)/done); math.Abs(m.WrongAccepted-want) > tol || m.WrongShare != m.WrongAccepted {
			t.Errorf("%s seed %d: wrong %v, kept %v; want %v ± %v (cheaters did %v of the work)",
				m.Policy, m.Seed, m.WrongShare, m.WrongAccepted, want, tol, m.CheaterWork)
		}
		if m.Caught != 0 || m.Canaries != 0 || m.CanaryUSD != 0 {
			t.Errorf("%s seed %d: caught %d, canaries %d (%v USD) without a canary rate", m.Policy, m.Seed, m.Caught, m.Canaries, m.CanaryUSD)
		}
		// An undetected lie changes nothing else: the market is the
		// honest one's.
		if b := base.Runs[i]; m.CostUSD != b.CostUSD || m.Fill != b.Fill || m.Leases != b.Leases {
			t.Errorf("%s seed %d: cost %v fill %v leases %d with silent cheaters, %v %v %d without",
				m.Policy, m.Seed, m.CostUSD, m.Fill, m.Leases, b.CostUSD, b.Fill, b.Leases)
		}
	}
}

func TestCanariesCatchCheaters(t *testing.T) {
	none, err := Run(cheating(0))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(cheating(0.2))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range res.Runs {
		n := none.Runs[i]
		if m.Caught == 0 || m.Caught > m.Cheaters {
			t.Errorf("%s seed %d: caught %d of %d cheaters", m.Policy, m.Seed, m.Caught, m.Cheaters)
		}
		if m.WrongAcceptedAfter > n.WrongAcceptedAfter/2 || m.WrongAccepted >= n.WrongAccepted {
			t.Errorf("%s seed %d: kept %v of results after the first %d jobs (%v in all) at canary rate 0.2, %v (%v) without",
				m.Policy, m.Seed, m.WrongAcceptedAfter, warmupJobs, m.WrongAccepted, n.WrongAcceptedAfter, n.WrongAccepted)
		}
		if m.CanaryUSD <= 0 || m.CanaryShare <= 0 || m.CanaryShare > 0.5 {
			t.Errorf("%s seed %d: canaries cost %v USD, %v of the jobs' own spend", m.Policy, m.Seed, m.CanaryUSD, m.CanaryShare)
		}
	}
}

// TestCanaryRuleAndExclusion checks the replay's renter against the
// node's rules: canaries are the jobs auction.CanaryDue picks among those
// that ran on one lease, never on the first run's provider, and a caught
// liar wins nothing once its exclusion takes effect.
func TestCanaryRuleAndExclusion(t *testing.T) {
	cfg := cheating(0.2)
	cfg.fill()
	for _, name := range cfg.Policies {
		r, err := runReplay(&cfg, 1, policies[name]())
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for n := range r.deterministic {
			if auction.CanaryDue(n, cfg.CanaryRate) {
				want++
			}
		}
		if len(r.canaries) != want || want == 0 {
			t.Errorf("%s: %d canaries for %d single-lease jobs, CanaryDue picks %d", name, len(r.canaries), r.deterministic, want)
		}
		excluded := 0
		for _, p := range r.w.provs {
			if p.excludedAt >= 0 {
				excluded++
				if !p.cheater {
					t.Errorf("%s: honest provider %d excluded", name, p.idx)
				}
			}
		}
		if excluded == 0 {
			t.Fatalf("%s: no cheater caught: the test needs one", name)
		}
		late := 0
		for _, l := range r.leases {
			p := r.w.provs[l.prov]
			if p.excluded(l.start) {
				t.Errorf("%s: job %d leased to %d at %d, excluded since %d", name, l.job.ID, l.prov, l.start, p.excludedAt)
			}
			if c := l.job.canaryOf; c != nil && slices.Contains(l.job.avoid, l.prov) {
				t.Errorf("%s: canary of job %d ran on its origin's provider %d", name, c.ID, l.prov)
			}
			if p.excludedAt >= 0 && l.start < p.excludedAt {
				late++
			}
		}
		if late == 0 {
			t.Errorf("%s: caught cheaters never had a lease before their exclusion", name)
		}
	}
}
