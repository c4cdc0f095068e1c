package reputation

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestGossipKeepOfTheDefaults(t *testing.T) {
	c := DefaultConfig()
	if got := c.GossipKeep(); got != 16 {
		t.Fatalf("GossipKeep with diminish 0.5 = %d, want 16", got)
	}
	for _, d := range []float64{0, 0.1, 0.5, 0.9, 0.99} {
		c.GossipDiminish = d
		n := c.GossipKeep()
		if tail := math.Pow(d, float64(n)) / (1 - d); n < maxGossipKeep && tail > GossipKeepLoss {
			t.Errorf("diminish %v: keeping %d leaves a tail of %v, over %v", d, n, tail, GossipKeepLoss)
		}
	}
}

// TestKeptReceiptsScoreAsAll: a node that keeps only the GossipKeep
// heaviest receipts (by ReceiptRank, chosen once) of each pair scores
// every provider, at any later time, within GossipKeepLoss of the score of
// all of them.
func TestKeptReceiptsScoreAsAll(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		var all []Receipt
		n := rapid.IntRange(0, 120).Draw(t, "receipts")
		for i := range n {
			all = append(all, Receipt{
				Lease:    fmt.Sprint("l", i),
				Provider: rapid.SampledFrom(propProviders).Draw(t, "provider"),
				Renter:   rapid.SampledFrom(propRenters).Draw(t, "renter"),
				At:       genPast(t, "at").Truncate(time.Millisecond), // as receipts carry it
				State:    rapid.SampledFrom(propStates).Draw(t, "state"),
				GPUHours: genHours(t, "hours"),
			})
		}
		kept := keepHeaviest(cfg, all)
		for _, later := range []time.Duration{0, time.Duration(rapid.Int64Range(0, int64(90*day)).Draw(t, "later"))} {
			now := t0.Add(later)
			whole, part := Fold(Evidence{Receipts: all}, now, cfg), Fold(Evidence{Receipts: kept}, now, cfg)
			for p, w := range whole {
				k := part[p]
				total := w.SuccessWeight + w.FailureWeight
				// Relative rounding: the fold orders a pair's receipts by
				// weight, the rank by its logarithm, and the two may
				// order nearly equal weights differently.
				eps := 1e-9 * total
				for _, d := range []float64{w.SuccessWeight - k.SuccessWeight, w.FailureWeight - k.FailureWeight} {
					if d < -eps || d > GossipKeepLoss*total+eps {
						t.Fatalf("%s at +%v: keeping %d of %d receipts moved a weight by %v of %v", p, later, len(kept), len(all), d, total)
					}
				}
				if w.Score > 0 && math.Abs(w.Score-k.Score) > 2*GossipKeepLoss {
					t.Fatalf("%s at +%v: score %v with every receipt, %v with the kept ones", p, later, w.Score, k.Score)
				}
			}
		}
	})
}

// keepHeaviest is what a node keeps: each pair's GossipKeep receipts of
// highest rank.
func keepHeaviest(cfg Config, in []Receipt) []Receipt {
	pairs := map[[2]string][]Receipt{}
	for _, r := range in {
		k := [2]string{r.Provider, r.Renter}
		pairs[k] = append(pairs[k], r)
	}
	var out []Receipt
	for _, rs := range pairs {
		slices.SortFunc(rs, cfg.HeavierFirst)
		out = append(out, rs[:min(len(rs), cfg.GossipKeep())]...)
	}
	return out
}
