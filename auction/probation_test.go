package auction

import (
	"fmt"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
)

// TestOneFailedLeaseDoesNotLockOut replays a renter's auctions through the
// real reputation fold: provider p has delivered six 4 GPU-hour leases and
// failed one of 100 GPU-hours, which puts it under the probation bar. It
// asks half what the others ask, so it is the cheapest even with its
// expected failure cost charged. It must win the 1 GPU-hour work at once
// (probation), be refused the 4-GPU silver work while under the bar, and
// win that too within a bounded number of auctions, by delivering.
func TestOneFailedLeaseDoesNotLockOut(t *testing.T) {
	rep := reputation.NewRunning(reputation.DefaultConfig())
	now := fixedNow
	lease := 0
	add := func(prov string, state reputation.State, gpuHours float64) {
		lease++
		rep.Add(reputation.Outcome{Lease: fmt.Sprint(lease), Provider: prov, EndedAt: now, State: state, GPUHours: gpuHours})
	}
	for range 6 {
		for _, prov := range []string{"p", "a", "b"} {
			add(prov, reputation.StateCompleted, 4)
		}
	}
	add("p", reputation.StateFailed, 100)
	w := DefaultWeights()
	prior := reputation.DefaultConfig().Prior
	if rel := rep.Score("p", now); rel >= prior-w.ExcludeBelowPrior {
		t.Fatalf("setup: p scores %.3f, want under the probation bar %.3f", rel, prior-w.ExcludeBelowPrior)
	}

	auction := func(gpus uint32) (Plan, MatchInput) {
		rfq := matchRFQ()
		rfq.Resources.GPUs, rfq.ExpectedDurationSec = gpus, 3600
		in := MatchInput{
			RFQ: rfq, RFQID: testRFQID, Prior: prior, Now: fixedNow, Weights: w, // the bids are dated fixedNow
			Bids:       []*Bid{matchBid("p", 1_000_000, 4), matchBid("a", 2_000_000, 4), matchBid("b", 2_000_000, 4)},
			Reputation: map[string]float64{},
		}
		for _, prov := range []string{"p", "a", "b"} {
			in.Reputation[prov] = rep.Score(prov, now)
		}
		return Match(in), in
	}
	const maxRounds = 8 // a 1-GPU auction then a 4-GPU one per round
	for round := 1; ; round++ {
		if round > maxRounds {
			t.Fatalf("p did not win the 4-GPU work in %d rounds (score %.3f)", maxRounds, rep.Score("p", now))
		}
		now = now.Add(time.Hour)
		small, _ := auction(1)
		if got := allocSummary(small); got != "p:1" {
			t.Fatalf("round %d: 1-GPU plan %s, want p:1 (score %.3f)", round, got, rep.Score("p", now))
		}
		add("p", reputation.StateCompleted, 1)
		big, in := auction(4)
		if got := allocSummary(big); got == "p:4" {
			t.Logf("p won the 4-GPU work in round %d at score %.3f", round, in.Reputation["p"])
			break
		}
		for _, l := range big.Losers {
			if l.Provider == "p" && l.Code != RejectReliability {
				t.Fatalf("round %d: p lost the 4-GPU work with %s (%s), want reliability (probation)", round, l.Code, l.Reason)
			}
		}
		if round == 1 && len(big.Allocations) == 0 {
			t.Fatalf("round 1: the others should fill the 4-GPU work: %s", big.Unfilled)
		}
	}
}

// TestProbationBoundsWork pins what a provider under the bar may win:
// bronze work and up to ProbationGPUHours; the RFQ's own minimum is a
// hard floor at any size.
func TestProbationBoundsWork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gpus   uint32
		tier   Tier
		minRel uint32
		want   string
	}{
		{"one GPU-hour, silver: on probation, wins", 1, TierSilver, 0, "p:1"},
		{"four GPUs, bronze: wins", 4, TierBronze, 0, "p:4"},
		{"four GPU-hours, silver: refused", 4, TierSilver, 0, "a:4"},
		{"one GPU under the RFQ's minimum: refused", 1, TierSilver, 700, "a:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rfq := matchRFQ()
			rfq.Resources.GPUs, rfq.Tier, rfq.MinReliabilityPermille = tc.gpus, tc.tier, tc.minRel
			rfq.ExpectedDurationSec = 3600
			in := defaultInput(rfq, matchBid("p", 1_000_000, 4), matchBid("a", 2_000_000, 4))
			in.Reputation = map[string]float64{"p": 0.6, "a": 0.95}
			if got := allocSummary(Match(in)); got != tc.want {
				t.Fatalf("plan %s, want %s", got, tc.want)
			}
		})
	}
}
