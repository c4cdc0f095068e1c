package reputation

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// tol absorbs floating-point rounding in comparisons that hold exactly in
// real arithmetic.
const tol = 1e-12

var (
	propProviders = []string{"p", "q"}
	propRenters   = []string{"r1", "r2", "r3", "p"} // "p" reporting on itself is ignored
	propStates    = []State{0, StateCompleted, StateFailed, StateExpired, StateCancelledByRenter, StatePreempted, StateUnreachable, 42}
)

func genConfig(t *rapid.T) Config {
	c := DefaultConfig()
	c.Prior = rapid.Float64Range(0, 1).Draw(t, "prior")
	c.PriorStrength = rapid.Float64Range(0.1, 50).Draw(t, "strength")
	c.OwnWeight = rapid.Float64Range(0, 2).Draw(t, "own")
	c.GossipWeight = rapid.Float64Range(0, 1).Draw(t, "gossip")
	c.UptimeWeight = rapid.Float64Range(0, 1).Draw(t, "uptime")
	c.GossipDiminish = rapid.Float64Range(0, 0.99).Draw(t, "diminish")
	c.HalfLife = time.Duration(rapid.Int64Range(int64(time.Hour), int64(60*day)).Draw(t, "halflife"))
	c.UptimeUnit = time.Duration(rapid.Int64Range(int64(time.Hour), int64(7*day)).Draw(t, "unit"))
	c.MaxLeaseGPUHours = rapid.Float64Range(1, 5000).Draw(t, "maxh")
	if rapid.Bool().Draw(t, "preemptedSucceeds") {
		c.Effects[StatePreempted] = EffectSuccess
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// genHours draws GPU-hours, now and then an odd value the fold must survive.
func genHours(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.Float64Range(0, 2000),
		rapid.Float64Range(0, 2),
		rapid.SampledFrom([]float64{0, -1, math.NaN(), math.Inf(1), 1e300}),
	).Draw(t, label)
}

// genPast draws a time up to 60 days before t0.
func genPast(t *rapid.T, label string) time.Time {
	return t0.Add(-time.Duration(rapid.Int64Range(0, int64(60*day)).Draw(t, label)))
}

// genEvidence draws evidence about "p" and "q" dated at or before t0, with
// lease IDs from a small pool so duplicates happen, and no fraud.
func genEvidence(t *rapid.T) Evidence {
	lease := rapid.Custom(func(t *rapid.T) string { return fmt.Sprint("l", rapid.IntRange(0, 30).Draw(t, "n")) })
	var ev Evidence
	for i := range rapid.IntRange(0, 25).Draw(t, "outcomes") {
		ev.Outcomes = append(ev.Outcomes, Outcome{
			Lease:    lease.Draw(t, "lease"),
			Provider: rapid.SampledFrom(propProviders).Draw(t, "provider"),
			EndedAt:  genPast(t, "ended"),
			State:    rapid.SampledFrom(propStates).Draw(t, "state"),
			GPUHours: genHours(t, fmt.Sprint("hours", i)),
		})
	}
	for i := range rapid.IntRange(0, 25).Draw(t, "receipts") {
		ev.Receipts = append(ev.Receipts, Receipt{
			Lease:    lease.Draw(t, "lease"),
			Provider: rapid.SampledFrom(propProviders).Draw(t, "provider"),
			Renter:   rapid.SampledFrom(propRenters).Draw(t, "renter"),
			At:       genPast(t, "at"),
			State:    rapid.SampledFrom(propStates).Draw(t, "state"),
			GPUHours: genHours(t, fmt.Sprint("rhours", i)),
		})
	}
	for range rapid.IntRange(0, 6).Draw(t, "windows") {
		from := genPast(t, "from")
		to := from.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(3*day)).Draw(t, "len")))
		if to.After(t0) {
			to = t0
		}
		ev.Uptime = append(ev.Uptime, Uptime{
			Provider: rapid.SampledFrom(propProviders).Draw(t, "provider"),
			From:     from, To: to,
			Seen:     rapid.IntRange(-1, 70).Draw(t, "seen"),
			Expected: rapid.IntRange(0, 60).Draw(t, "expected"),
		})
	}
	return ev
}

func genFrauds(t *rapid.T) []Fraud {
	var out []Fraud
	for range rapid.IntRange(0, 2).Draw(t, "frauds") {
		out = append(out, Fraud{Provider: rapid.SampledFrom(propProviders).Draw(t, "provider"), At: genPast(t, "fraudAt")})
	}
	return out
}

func TestPropScoreInRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		ev.Frauds = genFrauds(t)
		if rapid.Bool().Draw(t, "amnesty") {
			cfg.FraudAmnesty = time.Duration(rapid.Int64Range(1, int64(90*day)).Draw(t, "amnestyFor"))
		}
		now := t0.Add(time.Duration(rapid.Int64Range(-int64(30*day), int64(60*day)).Draw(t, "now")))
		for p, r := range Fold(ev, now, cfg) {
			if !(r.Score >= 0 && r.Score <= 1) {
				t.Fatalf("%s: score %v", p, r.Score)
			}
			if r.Fraud != (r.Badge == BadgeRevoked) || r.Fraud && r.Score != 0 {
				t.Fatalf("%s: fraud %v, badge %s, score %v", p, r.Fraud, r.Badge, r.Score)
			}
			if !(r.EffectiveGPUHours >= 0) || !(r.UptimeRatio >= 0 && r.UptimeRatio <= 1) {
				t.Fatalf("%s: volume %v uptime %v", p, r.EffectiveGPUHours, r.UptimeRatio)
			}
		}
	})
}

func TestPropOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		ev.Frauds = genFrauds(t)
		want := Fold(ev, t0, cfg)
		shuffled := Evidence{
			Outcomes: rapid.Permutation(ev.Outcomes).Draw(t, "outcomes"),
			Receipts: rapid.Permutation(ev.Receipts).Draw(t, "receipts"),
			Uptime:   rapid.Permutation(ev.Uptime).Draw(t, "uptime"),
			Frauds:   rapid.Permutation(ev.Frauds).Draw(t, "frauds"),
		}
		got := Fold(shuffled, t0, cfg)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled evidence folds differently:\n got %+v\nwant %+v", got, want)
		}
		for p, r := range want {
			if s := Score(p, shuffled, t0, cfg); !reflect.DeepEqual(s, r) {
				t.Fatalf("Score(%s) = %+v, Fold has %+v", p, s, r)
			}
		}
	})
}

// addLease adds one lease with a fresh ID for "p", as an own outcome or a
// receipt from another renter.
func addLease(t *rapid.T, ev Evidence, state State) Evidence {
	h, at := genHours(t, "newHours"), genPast(t, "newAt")
	if rapid.Bool().Draw(t, "own") {
		ev.Outcomes = append(ev.Outcomes[:len(ev.Outcomes):len(ev.Outcomes)],
			Outcome{Lease: "new", Provider: "p", EndedAt: at, State: state, GPUHours: h})
	} else {
		ev.Receipts = append(ev.Receipts[:len(ev.Receipts):len(ev.Receipts)],
			Receipt{Lease: "new", Provider: "p", Renter: rapid.SampledFrom(propRenters[:3]).Draw(t, "newRenter"), At: at, State: state, GPUHours: h})
	}
	return ev
}

func TestPropSuccessNeverLowers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		before := Score("p", ev, t0, cfg).Score
		after := Score("p", addLease(t, ev, StateCompleted), t0, cfg).Score
		if after < before-tol {
			t.Fatalf("a success lowered the score: %v -> %v", before, after)
		}
	})
}

func TestPropFailureNeverRaises(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		state := rapid.SampledFrom([]State{StateFailed, StateExpired, StateUnreachable}).Draw(t, "failure")
		before := Score("p", ev, t0, cfg).Score
		after := Score("p", addLease(t, ev, state), t0, cfg).Score
		if after > before+tol {
			t.Fatalf("a failure raised the score: %v -> %v", before, after)
		}
	})
}

func TestPropDecayTowardPrior(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		later := t0.Add(time.Duration(rapid.Int64Range(0, int64(365*day)).Draw(t, "later")))
		for p, r := range Fold(ev, t0, cfg) {
			d0 := r.Score - cfg.Prior
			d1 := Score(p, ev, later, cfg).Score - cfg.Prior
			if math.Abs(d1) > math.Abs(d0)+tol || d0*d1 < -tol {
				t.Fatalf("%s: score went from prior%+v to prior%+v as time passed", p, d0, d1)
			}
		}
	})
}

func TestPropFraudZeroes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		ev.Frauds = []Fraud{{Provider: "p", At: genPast(t, "fraudAt")}}
		r := Score("p", ev, t0, cfg)
		if r.Score != 0 || r.Badge != BadgeRevoked || !r.Fraud || r.Badge.Allows("bronze") {
			t.Fatalf("fraud proof in force, got %+v", r)
		}
	})
}

func TestPropFlakyBelowReliable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		// A weight so small that the evidence vanishes below the prior's
		// floating-point resolution would make them tie.
		cfg.OwnWeight = max(cfg.OwnWeight, 0.01)
		n := rapid.IntRange(10, 60).Draw(t, "n")
		var reliable, flaky Evidence
		for i := range n {
			o := Outcome{
				Lease: fmt.Sprint("l", i), Provider: "p", State: StateCompleted,
				EndedAt:  t0.Add(-time.Duration(rapid.Int64Range(0, int64(30*day)).Draw(t, "age"))),
				GPUHours: rapid.Float64Range(0.1, 100).Draw(t, "hours"),
			}
			reliable.Outcomes = append(reliable.Outcomes, o)
			if i%10 < 3 { // 30% of leases fail
				o.State = StateFailed
			}
			flaky.Outcomes = append(flaky.Outcomes, o)
		}
		// Likewise for decay, which is relative to the half-life.
		if cfg.HalfLife < day {
			cfg.HalfLife = day
		}
		r, f := Score("p", reliable, t0, cfg), Score("p", flaky, t0, cfg)
		if !(f.Score < r.Score) {
			t.Fatalf("flaky %v not below reliable %v", f.Score, r.Score)
		}
	})
}

func TestPropNewProviderScoresPrior(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		ev := genEvidence(t)
		if r := Score("new", ev, t0, cfg); r.Score != cfg.Prior || r.Badge > BadgeNone && cfg.Bronze.GPUHours > 0 {
			t.Fatalf("new provider: %+v, want the prior %v", r, cfg.Prior)
		}
		// Neutral evidence alone leaves a provider at the prior too.
		neutral := Evidence{Outcomes: []Outcome{{Lease: "c", Provider: "new", EndedAt: t0, State: StateCancelledByRenter, GPUHours: 5}}}
		if r := Score("new", neutral, t0, cfg); r.Score != cfg.Prior {
			t.Fatalf("only neutral evidence: %v, want the prior %v", r.Score, cfg.Prior)
		}
	})
}
