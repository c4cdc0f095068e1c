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
	all  runningSums // every provider's outcomes together
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
	h := o.GPUHours
	if !(h > 0) {
		h = 0
	}
	v := r.cfg.OwnWeight * volume(min(h, r.cfg.MaxLeaseGPUHours))
	for _, x := range []*runningSums{rs, &r.all} {
		if x.at.IsZero() || at.After(x.at) {
			x.s, x.fl = r.decayed(x, at)
			x.at = at
		}
		switch r.cfg.effect(o.State) {
		case EffectSuccess:
			x.s += v
		case EffectFailure:
			x.fl += v
		}
	}
}

// Score is the provider's reliability at now: exactly cfg.Prior for a
// provider with no outcomes.
func (r *Running) Score(provider string, now time.Time) float64 {
	return r.ScoreWithPrior(provider, now, r.cfg.Prior)
}

// Overall is the reliability of all providers together at now, with
// cfg.Prior as its prior: the renter's experience of the market. As the
// prior of [Running.ScoreWithPrior] it scores a newcomer like the market
// it joins (empirical Bayes), so a pessimistic fixed prior does not lock
// reliable newcomers out once the market proves reliable.
func (r *Running) Overall(now time.Time) float64 {
	if r.all.at.IsZero() {
		return r.cfg.Prior
	}
	return r.scoreOf(&r.all, now, r.cfg.Prior)
}

// ScoreWithPrior is Score with prior in place of cfg.Prior.
func (r *Running) ScoreWithPrior(provider string, now time.Time, prior float64) float64 {
	rs := r.sums[provider]
	if rs == nil {
		return prior
	}
	return r.scoreOf(rs, now, prior)
}

func (r *Running) scoreOf(rs *runningSums, now time.Time, prior float64) float64 {
	n := r.cfg.PriorStrength
	s, fl := r.decayed(rs, now.Round(0))
	return min(max(prior+((1-prior)*s-prior*fl)/(n+s+fl), 0), 1)
}
