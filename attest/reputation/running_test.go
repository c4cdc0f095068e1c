package reputation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRunningMatchesScore checks the incremental fold against the full one
// on random own histories added in time order.
func TestRunningMatchesScore(t *testing.T) {
	cfg := DefaultConfig()
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1_700_000_000, 0)
	for trial := range 50 {
		run := NewRunning(cfg)
		var ev Evidence
		at := t0
		for i := range 1 + rng.IntN(40) {
			at = at.Add(time.Duration(rng.IntN(48*3600)) * time.Second)
			o := Outcome{
				Lease: fmt.Sprintf("l%d", i), Provider: "p", EndedAt: at,
				State: States[rng.IntN(len(States))], GPUHours: rng.Float64() * 100,
			}
			ev.Outcomes = append(ev.Outcomes, o)
			run.Add(o)
			now := at.Add(time.Duration(rng.IntN(10*86400)) * time.Second)
			want := Score("p", ev, now, cfg).Score
			if got := run.Score("p", now); math.Abs(got-want) > 1e-9 {
				t.Fatalf("trial %d step %d: running %v, Score %v", trial, i, got, want)
			}
		}
	}
	if got := NewRunning(cfg).Score("nobody", t0); got != cfg.Prior {
		t.Fatalf("no evidence: %v, want prior %v", got, cfg.Prior)
	}
}

// TestRunningOverallPrior: the market-wide score is the prior with no
// evidence, follows the market's record, and as a prior scores a newcomer
// like the market.
func TestRunningOverallPrior(t *testing.T) {
	cfg := DefaultConfig()
	run := NewRunning(cfg)
	t0 := time.Unix(1_700_000_000, 0)
	if got := run.Overall(t0); got != cfg.Prior {
		t.Fatalf("empty overall %v, want prior", got)
	}
	for i := range 40 {
		run.Add(Outcome{Lease: fmt.Sprint(i), Provider: fmt.Sprintf("p%d", i%4), EndedAt: t0, State: StateCompleted, GPUHours: 1})
	}
	o := run.Overall(t0)
	if o <= cfg.Prior || run.ScoreWithPrior("newcomer", t0, o) != o {
		t.Fatalf("overall %v after 40 successes; newcomer %v", o, run.ScoreWithPrior("newcomer", t0, o))
	}
}
