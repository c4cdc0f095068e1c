package reputation

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Result is one provider's score and the evidence behind it.
type Result struct {
	Provider string
	// Score is the reliability in 0..1 (see the package doc); 0 while a
	// fraud proof is in force.
	Score float64
	Badge Badge
	// Fraud: a fraud proof is in force.
	Fraud bool

	// Counted evidence, undecayed: own lease outcomes and gossiped receipts
	// by effect. GossipIgnored counts receipts left out: a second receipt
	// for a lease, a lease this node has its own outcome for, a renter
	// reporting on itself, or evidence older than a pardoned fraud.
	OwnSuccesses, OwnFailures, OwnNeutral          int
	GossipSuccesses, GossipFailures, GossipNeutral int
	GossipIgnored                                  int
	// UptimeWindows is how many heartbeat windows counted; UptimeRatio is
	// their decay-weighted seen/expected ratio (0 when there are none).
	UptimeWindows int
	UptimeRatio   float64

	// SuccessWeight and FailureWeight are the decayed, weighted
	// observations added to the prior's (S and F in the package doc).
	SuccessWeight, FailureWeight float64
	// EffectiveGPUHours is the volume behind the badge: GPU-hours of
	// successful leases, each times its source weight (and gossip
	// diminishing) and decay.
	EffectiveGPUHours float64
}

// Score folds the evidence about provider (evidence about other providers
// is skipped) as of now. With no evidence the score is exactly cfg.Prior.
// cfg should pass [Config.Validate].
func Score(provider string, ev Evidence, now time.Time, cfg Config) Result {
	return score(provider, ev.only(provider), now, cfg)
}

// Fold scores every provider the evidence mentions, as [Score] would. The
// result does not depend on the order of the evidence.
func Fold(ev Evidence, now time.Time, cfg Config) map[string]Result {
	out := map[string]Result{}
	for p, e := range ev.byProvider() {
		out[p] = score(p, *e, now, cfg)
	}
	return out
}

// Scores returns just the scores, the shape auction.MatchInput.Reputation
// takes.
func Scores(results map[string]Result) map[string]float64 {
	out := make(map[string]float64, len(results))
	for p, r := range results {
		out[p] = r.Score
	}
	return out
}

// folder holds what one provider's fold needs.
type folder struct {
	now time.Time
	cfg Config
	// cutoff: evidence at or before it is ignored (a pardoned fraud).
	cutoff    time.Time
	hasCutoff bool
}

// decay is 2^(-age/HalfLife); evidence from the future counts as now.
func (f *folder) decay(t time.Time) float64 {
	age := f.now.Sub(t)
	if age <= 0 {
		return 1
	}
	return math.Exp2(-age.Seconds() / f.cfg.HalfLife.Seconds())
}

// hours is a lease's GPU-hours, made safe: NaN and negatives are 0, and
// the cap applies.
func (f *folder) hours(h float64) float64 {
	if !(h > 0) {
		return 0
	}
	return min(h, f.cfg.MaxLeaseGPUHours)
}

// volume is what one lease of h (safe) GPU-hours counts as: log2(1+h).
func volume(h float64) float64 { return math.Log2(1 + h) }

func (f *folder) dropped(t time.Time) bool { return f.hasCutoff && !t.After(f.cutoff) }

func score(p string, ev Evidence, now time.Time, cfg Config) Result {
	r := Result{Provider: p}
	// Wall-clock arithmetic only: a monotonic reading in now would make
	// ages depend on which evidence times happen to carry one.
	f := &folder{now: now.Round(0), cfg: cfg}

	// Fraud: the latest proof decides.
	if len(ev.Frauds) > 0 {
		latest := ev.Frauds[0].At
		for _, fr := range ev.Frauds[1:] {
			if fr.At.After(latest) {
				latest = fr.At
			}
		}
		if cfg.FraudAmnesty == 0 || f.now.Sub(latest) < cfg.FraudAmnesty {
			r.Fraud = true
		} else {
			f.cutoff, f.hasCutoff = latest, true
		}
	}

	var s, fl, vol float64 // sums, always taken in a canonical order

	// Own outcomes: one per lease, the first in canonical order.
	outs := make([]Outcome, 0, len(ev.Outcomes))
	for _, o := range ev.Outcomes {
		if f.dropped(o.EndedAt) {
			continue
		}
		o.GPUHours = f.hours(o.GPUHours)
		outs = append(outs, o)
	}
	slices.SortFunc(outs, func(a, b Outcome) int {
		return cmp.Or(cmp.Compare(a.Lease, b.Lease), a.EndedAt.Compare(b.EndedAt),
			cmp.Compare(a.State, b.State), cmp.Compare(a.GPUHours, b.GPUHours))
	})
	outs = slices.CompactFunc(outs, func(a, b Outcome) bool { return a.Lease == b.Lease })
	own := make(map[string]bool, len(outs))
	for _, o := range outs {
		own[o.Lease] = true
		m := cfg.OwnWeight * f.decay(o.EndedAt)
		switch cfg.effect(o.State) {
		case EffectSuccess:
			r.OwnSuccesses++
			s += m * volume(o.GPUHours)
			vol += m * o.GPUHours
		case EffectFailure:
			r.OwnFailures++
			fl += m * volume(o.GPUHours)
		default:
			r.OwnNeutral++
		}
	}

	gs, gf, gv := f.gossip(p, ev.Receipts, own, &r)
	s, fl, vol = s+gs, fl+gf, vol+gv

	us, uf := f.uptime(ev.Uptime, &r)
	s, fl = s+us, fl+uf

	r.SuccessWeight, r.FailureWeight, r.EffectiveGPUHours = s, fl, vol
	if r.Fraud {
		r.Score, r.Badge = 0, BadgeRevoked
		return r
	}
	// (Prior*n + S)/(n + S + F), written so that no evidence gives
	// exactly Prior.
	prior, n := cfg.Prior, cfg.PriorStrength
	r.Score = min(max(prior+((1-prior)*s-prior*fl)/(n+s+fl), 0), 1)
	r.Badge = cfg.badgeFor(r.Score, vol)
	return r
}

// gossip folds receipts: one per lease, none for leases in own or from the
// provider about itself, and one renter's receipts diminishing by weight.
func (f *folder) gossip(p string, in []Receipt, own map[string]bool, r *Result) (s, fl, vol float64) {
	recs := make([]Receipt, 0, len(in))
	for _, x := range in {
		if f.dropped(x.At) || x.Renter == p || own[x.Lease] {
			r.GossipIgnored++
			continue
		}
		x.GPUHours = f.hours(x.GPUHours)
		recs = append(recs, x)
	}
	slices.SortFunc(recs, func(a, b Receipt) int {
		return cmp.Or(cmp.Compare(a.Lease, b.Lease), cmp.Compare(a.Renter, b.Renter), a.At.Compare(b.At),
			cmp.Compare(a.State, b.State), cmp.Compare(a.GPUHours, b.GPUHours))
	})
	n := len(recs)
	recs = slices.CompactFunc(recs, func(a, b Receipt) bool { return a.Lease == b.Lease })
	r.GossipIgnored += n - len(recs)

	// Weight of each receipt before diminishing; rank within its renter by
	// weight (heaviest first), ties broken by the canonical order.
	type item struct {
		idx    int
		weight float64
	}
	base := make([]float64, len(recs))
	byRenter := map[string][]item{}
	for i, x := range recs {
		switch f.cfg.effect(x.State) {
		case EffectSuccess:
			r.GossipSuccesses++
		case EffectFailure:
			r.GossipFailures++
		default:
			r.GossipNeutral++
			continue
		}
		base[i] = f.cfg.GossipWeight * f.decay(x.At) * volume(x.GPUHours)
		byRenter[x.Renter] = append(byRenter[x.Renter], item{i, base[i]})
	}
	factor := make([]float64, len(recs))
	for _, items := range byRenter {
		slices.SortFunc(items, func(a, b item) int {
			return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(a.idx, b.idx))
		})
		for k, it := range items {
			factor[it.idx] = math.Pow(f.cfg.GossipDiminish, float64(k))
		}
	}
	for i, x := range recs {
		switch f.cfg.effect(x.State) {
		case EffectSuccess:
			s += base[i] * factor[i]
			vol += f.cfg.GossipWeight * f.decay(x.At) * factor[i] * x.GPUHours
		case EffectFailure:
			fl += base[i] * factor[i]
		}
	}
	return s, fl, vol
}

// uptime folds heartbeat windows: one per (From, To), the decay integrated
// over the window.
func (f *folder) uptime(in []Uptime, r *Result) (s, fl float64) {
	ws := make([]Uptime, 0, len(in))
	for _, u := range in {
		if u.Expected <= 0 || u.Seen < 0 || !u.To.After(u.From) || f.dropped(u.To) {
			continue
		}
		if f.hasCutoff && !u.From.After(f.cutoff) {
			u.From = f.cutoff
		}
		ws = append(ws, u)
	}
	slices.SortFunc(ws, func(a, b Uptime) int {
		return cmp.Or(a.From.Compare(b.From), a.To.Compare(b.To), cmp.Compare(a.Seen, b.Seen), cmp.Compare(a.Expected, b.Expected))
	})
	ws = slices.CompactFunc(ws, func(a, b Uptime) bool { return a.From.Equal(b.From) && a.To.Equal(b.To) })

	// The integral of 2^(-age/h) over the window, in units:
	// h/ln2 * (2^(-ageTo/h) - 2^(-ageFrom/h)) / unit.
	span := f.cfg.HalfLife.Seconds() / math.Ln2 / f.cfg.UptimeUnit.Seconds()
	var total, seen float64
	for _, u := range ws {
		w := f.cfg.UptimeWeight * span * (f.decay(u.To) - f.decay(u.From))
		ratio := min(float64(u.Seen)/float64(u.Expected), 1)
		r.UptimeWindows++
		total += w
		seen += w * ratio
		s += w * ratio
		fl += w * (1 - ratio)
	}
	if total > 0 {
		r.UptimeRatio = seen / total
	}
	return s, fl
}
