package auction

import (
	"math"
	"testing"
)

// TestCanaryShare: over 100 jobs the share of canary runs is within a
// point of the rate, and over any 20 consecutive jobs within one job.
func TestCanaryShare(t *testing.T) {
	for _, rate := range []float64{0, 0.01, 0.05, 0.2, 0.333, 0.5, 1} {
		due := make([]bool, 100)
		n := 0
		for i := range due {
			due[i] = CanaryDue(uint64(i), rate)
			if due[i] {
				n++
			}
		}
		if got := float64(n) / 100; math.Abs(got-rate) > 0.01 {
			t.Errorf("rate %v: %d canaries in 100 jobs", rate, n)
		}
		for start := 0; start+20 <= 100; start++ {
			k := 0
			for _, d := range due[start : start+20] {
				if d {
					k++
				}
			}
			if math.Abs(float64(k)-20*rate) > 1 {
				t.Errorf("rate %v: %d canaries in jobs %d..%d", rate, k, start, start+19)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, tc := range []struct {
		w    *Workload
		want bool
	}{
		{&Workload{Runtime: RuntimeWasm}, true},
		{&Workload{Runtime: RuntimeDocker}, false},
		{&Workload{Runtime: RuntimeWasm, Egress: true}, false},
		{&Workload{Runtime: RuntimeWasm, Service: &Service{}}, false},
		{nil, false},
	} {
		if got := Deterministic(tc.w); got != tc.want {
			t.Errorf("Deterministic(%+v) = %v", tc.w, got)
		}
	}
}
