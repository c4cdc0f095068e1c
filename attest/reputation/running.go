package reputation

import (
	"math"
	"time"
)

// Running is an incremental fold of one renter's own outcomes, for callers
// that score the same providers after every lease (a simulator, a busy
// auctioneer). [Score] sorts a provider's whole history on each call;
// Running keeps each provider's decayed sums at the time of its latest
// outcome, so Add and Score are O(1): decay is exponential, so sums at a
// later time are the stored sums times one decay factor.
//
// It gives the score [Score] gives for the same own outcomes, provided
// every lease is added once and outcomes arrive in EndedAt order (an
// outcome older than the provider's latest counts as of the latest, which
// Score would decay further). Gossip, uptime and fraud are not folded: use
// [Fold] for those. The zero Running is not usable; call [NewRunning].
type Running struct {
	cfg  Config
	sums map[string]*runningSums
}

type runningSums struct {
	at    time.Time // when s and fl were last brought up to date
	s, fl float64
}

// NewRunning returns an empty fold under cfg (which should pass
// [Config.Validate]).
func NewRunning(cfg Config) *Running {
	return &Running{cfg: cfg, sums: map[string]*runningSums{}}
}

// decayed returns s and fl decayed from their time to t (no growth for a t
// before it, as Score counts evidence from the future as now).
func (r *Running) decayed(rs *runningSums, t time.Time) (s, fl float64) {
	age := t.Sub(rs.at)
	if age <= 0 {
		return rs.s, rs.fl
	}
	d := math.Exp2(-age.Seconds() / r.cfg.HalfLife.Seconds())
	return rs.s * d, rs.fl * d
}

// Add folds one outcome in. Neutral states only count as seen.
func (r *Running) Add(o Outcome) {
	rs := r.sums[o.Provider]
	if rs == nil {
		rs = &runningSums{at: o.EndedAt.Round(0)}
		r.sums[o.Provider] = rs
	}
	at := o.EndedAt.Round(0)
	if at.Before(rs.at) {
		at = rs.at
	}
	rs.s, rs.fl = r.decayed(rs, at)
	rs.at = at
	h := o.GPUHours
	if !(h > 0) {
		h = 0
	}
	v := r.cfg.OwnWeight * volume(min(h, r.cfg.MaxLeaseGPUHours))
	switch r.cfg.effect(o.State) {
	case EffectSuccess:
		rs.s += v
	case EffectFailure:
		rs.fl += v
	}
}

// Score is the provider's reliability at now: exactly cfg.Prior for a
// provider with no outcomes.
func (r *Running) Score(provider string, now time.Time) float64 {
	prior, n := r.cfg.Prior, r.cfg.PriorStrength
	rs := r.sums[provider]
	if rs == nil {
		return prior
	}
	s, fl := r.decayed(rs, now.Round(0))
	return min(max(prior+((1-prior)*s-prior*fl)/(n+s+fl), 0), 1)
}
