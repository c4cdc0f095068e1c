package reputation_test

import (
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
)

func Example() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := reputation.Evidence{
		Outcomes: []reputation.Outcome{
			// Ten one-GPU-hour leases this node held with provider A over
			// the last ten days, one of which failed.
			{Lease: "a0", Provider: "A", EndedAt: now.Add(-1 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a1", Provider: "A", EndedAt: now.Add(-24 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a2", Provider: "A", EndedAt: now.Add(-48 * time.Hour), State: reputation.StateFailed, GPUHours: 1},
			{Lease: "a3", Provider: "A", EndedAt: now.Add(-72 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a4", Provider: "A", EndedAt: now.Add(-96 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a5", Provider: "A", EndedAt: now.Add(-120 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a6", Provider: "A", EndedAt: now.Add(-144 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a7", Provider: "A", EndedAt: now.Add(-168 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a8", Provider: "A", EndedAt: now.Add(-192 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			{Lease: "a9", Provider: "A", EndedAt: now.Add(-216 * time.Hour), State: reputation.StateCompleted, GPUHours: 1},
			// One big lease with provider B yesterday.
			{Lease: "b0", Provider: "B", EndedAt: now.Add(-24 * time.Hour), State: reputation.StateCompleted, GPUHours: 8 * 24},
		},
		Receipts: []reputation.Receipt{
			// Another renter reports that C vanished in the middle of a lease.
			{Lease: "c0", Provider: "C", Renter: "R", At: now.Add(-2 * time.Hour), State: reputation.StateUnreachable, GPUHours: 4},
		},
	}
	results := reputation.Fold(ev, now, reputation.DefaultConfig())
	for _, p := range []string{"A", "B", "C"} {
		r := results[p]
		fmt.Printf("%s: score %.3f, %.1f GPU-h, badge %s, gold work: %v\n", p, r.Score, r.EffectiveGPUHours, r.Badge, r.Badge.Allows("gold"))
	}
	// A provider nobody has seen scores the prior and can take bronze work.
	newcomer := reputation.Score("D", ev, now, reputation.DefaultConfig())
	fmt.Printf("D: score %.3f, badge %s, bronze work: %v\n", newcomer.Score, newcomer.Badge, newcomer.Badge.Allows("bronze"))
	// Output:
	// A: score 0.844, 5.8 GPU-h, badge bronze, gold work: false
	// B: score 0.916, 173.9 GPU-h, badge silver, gold work: false
	// C: score 0.703, 0.0 GPU-h, badge none, gold work: false
	// D: score 0.800, badge none, bronze work: true
}
