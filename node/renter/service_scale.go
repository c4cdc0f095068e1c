package renter

import (
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// scaleSample is how often the scaler reads the endpoint's load.
const scaleSample = 250 * time.Millisecond

// replicaScaler applies a replicated service's scaling rule
// (auction.ScaleReplicas): it averages the requests in flight per replica
// at the service's endpoint over the spec's window and, at the window's
// end, says how many replicas to run. A service without an endpoint, or
// without bounds, never scales.
type replicaScaler struct {
	lo, hi  int
	target  int
	cap     float64 // max_usd_per_mtok; 0: none
	window  time.Duration
	since   time.Time
	sum     float64
	samples int
}

func newReplicaScaler(spec *auction.JobSpec, now time.Time) *replicaScaler {
	lo, hi := spec.ReplicaBounds()
	target, window := spec.ScaleRule()
	return &replicaScaler{lo: lo, hi: hi, target: target, cap: spec.MaxUSDPerMTokCap(), window: window, since: now}
}

// sample reads the load once; at the window's end it returns the count to
// run next and the average it is based on (ok), and starts a new window.
// cost, read at the window's end, is the service's $ per million tokens
// so far (false before any token).
func (sc *replicaScaler) sample(now time.Time, cur int, load func(jobID string) (inFlight, replicas int, ok bool),
	cost func(jobID string) (usdPerMTok float64, ok bool), jobID string) (next int, avg float64, overCap, ok bool) {
	if sc.lo == sc.hi || load == nil {
		return cur, 0, false, false
	}
	inFlight, replicas, has := load(jobID)
	if !has {
		sc.since, sc.sum, sc.samples = now, 0, 0
		return cur, 0, false, false
	}
	sc.sum += float64(inFlight) / float64(max(1, replicas))
	sc.samples++
	if now.Sub(sc.since) < sc.window {
		return cur, 0, false, false
	}
	avg = sc.sum / float64(sc.samples)
	sc.since, sc.sum, sc.samples = now, 0, 0
	if sc.cap > 0 && cost != nil {
		usd, known := cost(jobID)
		overCap = known && usd > sc.cap
	}
	next = auction.ScaleReplicas(cur, sc.lo, sc.hi, avg, sc.target, overCap)
	return next, avg, overCap, next != cur
}
