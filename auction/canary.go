package auction

import "math"

// Canary runs. A renter cannot tell a wrong result from a right one by
// looking at it, but a deterministic job (a WASM module, no network, not a
// service: the same module, input and settings give the same output) run
// twice on independent providers must give one output CID twice. A renter
// with market.canary_rate > 0 re-runs that share of its deterministic
// jobs on a second provider and compares.

// Deterministic reports whether w's output is a function of its spec, so
// two honest runs agree byte for byte.
func Deterministic(w *Workload) bool {
	return w != nil && w.Runtime == RuntimeWasm && !w.Egress && w.Service == nil
}

// CanaryDue reports whether the n-th deterministic job (n from 0) a
// renter completes is re-run at rate (0..1): exactly when the running
// count of canaries, floor((n+1) x rate), grows. The share of canaries is
// within one job of rate over any run of jobs, so its cost is what the
// operator set; which jobs they are depends on the renter's own job
// order, which providers do not see.
func CanaryDue(n uint64, rate float64) bool {
	if !(rate > 0) {
		return false
	}
	if rate >= 1 {
		return true
	}
	return math.Floor(float64(n+1)*rate) > math.Floor(float64(n)*rate)
}
