package auction

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// The matcher is the renter's side of DESIGN.md §6 step 4. It is a pure
// function in three stages, in the manner of nomad's feasible/rank
// iterators and bacalhau's bid strategies: filter every bid with a reason,
// score the survivors, select the winners and price them. It does no I/O
// and reads no clock: the caller passes Now, reputation and RTTs.

// Rejection codes. Every bid that does not win carries exactly one; the
// filter codes are checked in the order listed, so a bid reports the first
// rule it breaks.
const (
	RejectNoRFQ       = "no_rfq"      // MatchInput.RFQ is nil
	RejectWrongRFQ    = "wrong_rfq"   // bid names another RFQ or job
	RejectDeclined    = "declined"    // provider declined an award for this RFQ
	RejectSuperseded  = "superseded"  // the provider sent a later bid
	RejectUnbacked    = "unbacked"    // no capacity record backs the bid (MatchInput.Unbacked)
	RejectMalformed   = "malformed"   // nil bid, empty or repeated GPU UUIDs, too many GPUs
	RejectNoGPUs      = "no_gpus"     // bid offers zero GPUs
	RejectExpired     = "expired"     // ValidUntilMs is not after Now
	RejectPrice       = "price"       // asked price above the RFQ's maximum
	RejectReliability = "reliability" // below MinReliabilityPermille
	RejectRTT         = "rtt"         // measured RTT above MaxRTTMs
	RejectRegion      = "region"      // region not in the RFQ's list
	RejectModel       = "model"       // GPU model not accepted
	RejectVRAM        = "vram"        // VRAM below the minimum
	RejectNotice      = "notice"      // bronze notice shorter than MinNoticeSec
	RejectStart       = "start"       // earliest start after StartByMs
	RejectTerms       = "terms"       // lease terms the renter cannot accept (MatchInput.Terms)
	// Feasible bids that did not win; they are also listed in Plan.Backups.
	RejectOutranked = "outranked" // feasible, but better bids filled the request
	RejectUnfilled  = "unfilled"  // feasible, but the feasible bids cannot fill it
)

// maxLocalityDiscount caps the data-locality discount, so a bid holding
// many datasets cannot halve its way past a far cheaper one.
const maxLocalityDiscount = 0.5

// minScoredReliability keeps price/reliability^w finite for a provider
// with reliability 0 (allowed when the RFQ sets no minimum).
const minScoredReliability = 1e-3

// Weights tune the effective price of a bid
//
//	eff = (price × rel × (1 + cold) + RTTPerMs × rttMs) × (1 - locality) × (1 - near)
//
// where locality = min(LocalityBonus × datasets held, 0.5), near is
// NearBonus for a bid from one of the RFQ's Near regions (0 otherwise) and rel is the
// reliability term: 1/reliability^ReliabilityExp, or, when FailureCost is
// set, 1 + FailureCost × (1 - reliability); cold is the cold-start charge
// of a provider without the RFQ's model (ColdStartCharge, cold_start.go),
// 0 for one that holds it. The zero Weights is a pure
// price matcher (every term off, single hosts preferred as DESIGN.md §6
// first had it); DefaultWeights is what a renter runs. Negative or NaN
// fields count as 0.
type Weights struct {
	// ReliabilityExp is w in price/reliability^w: 1 makes a 0.5-reliable
	// provider look twice as dear; 0 ignores reliability. Ignored when
	// FailureCost is set.
	ReliabilityExp float64
	// FailureCost weighs a failure by what it costs the renter, as a
	// multiple of the lease's price: a failed lease wastes the work done
	// (half of it on average) and delays the job. The reliability term is
	// then 1 + FailureCost × P(failure), linear in the failure odds, so a
	// newcomer at the prior is handicapped by its expected cost and no
	// more, and a pool's P(failure) is 1 - the product of its members'
	// reliabilities.
	FailureCost float64
	// RankPools makes single hosts and pools compete by total effective
	// cost (see Match); false keeps the rule that a single host that can
	// hold the job wins over any pool.
	RankPools bool
	// HostPremium is the fraction added to a pool's cost per host beyond
	// the first (more hosts, more coordination), at most MaxHostPremium
	// in all. Used with RankPools.
	HostPremium float64
	// RTTPerMs is added per millisecond of RTT, uUSD per GPU-hour.
	RTTPerMs float64
	// LocalityBonus is the fractional discount per requested dataset the
	// bid says it holds.
	LocalityBonus float64
	// NearBonus is the fractional discount for a bid from one of the
	// RFQ's Near regions (where the work's users are), at most
	// maxNearBonus.
	NearBonus float64
	// ExcludeBelowPrior is the probation bar: a provider whose
	// reliability is more than this below MatchInput.Prior (clearly worse
	// than a newcomer) is refused (RejectReliability) for work larger
	// than ProbationGPUHours above the bronze tier. It keeps winning
	// small and bronze work, where its reliability term already charges
	// its expected failure cost and a failure wastes little, so one failed
	// lease (which a renter may even have caused) never locks it out: it
	// recovers by delivering.
	// With the market's own reliability as the prior
	// (reputation.Running.Overall) the bar catches the outliers, never the
	// market. 0: off. The RFQ's MinReliabilityPermille is the only hard
	// floor.
	ExcludeBelowPrior float64
	// ProbationGPUHours is the largest request, GPUs times the RFQ's
	// expected duration, a provider under the probation bar may still win
	// above the bronze tier.
	ProbationGPUHours float64
	// UnknownRTT is the RTT charged for a provider with no measurement
	// when the RFQ sets no MaxRTTMs (with one, MaxRTTMs is charged).
	UnknownRTT time.Duration
	// ColdStartCharge weighs the download of the RFQ's model by a
	// provider that does not hold it, as a multiple of the lease's price
	// over the download time: 1 charges exactly the paid time the renter
	// loses before the job serves; 0 ignores where the model is.
	ColdStartCharge float64
}

// MaxHostPremium bounds Weights.HostPremium's total for one pool.
const MaxHostPremium = 0.25

// DefaultWeights are the weights a renter uses unless configured: a
// failure weighed at twice the lease's price (the work lost and the rerun's
// delay; tuned on a Philly replay, docs/benchmarks.md), pools and single hosts ranked together
// with 2% per extra host, providers more than 0.05 below the prior on
// probation (only bronze work and work of at most 1 GPU-hour; tuned on
// Philly replays, docs/benchmarks.md), 200 uUSD/GPU-h per
// ms of RTT (an H100 at about 2.5 USD/h pays 0.8% per 100 ms), 5% off per
// dataset held, 10% off for a provider in a region the renter named near,
// a cold start charged at the lease's price.
func DefaultWeights() Weights {
	return Weights{
		FailureCost: 2, RankPools: true, HostPremium: 0.02, ExcludeBelowPrior: 0.05, ProbationGPUHours: 1,
		RTTPerMs: 200, LocalityBonus: 0.05, NearBonus: 0.1, UnknownRTT: 100 * time.Millisecond,
		ColdStartCharge: 1,
	}
}

// maxNearBonus caps Weights.NearBonus: nearness may outweigh a modest
// price difference, never make a provider free.
const maxNearBonus = 0.5

// PriceOnlyWeights rank by asked price alone, pools and single hosts
// together: the reference a replay compares reliability weighting with.
func PriceOnlyWeights() Weights { return Weights{RankPools: true} }

func (w Weights) sanitized() Weights {
	nonNeg := func(x float64) float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0
		}
		return x
	}
	w.ReliabilityExp = nonNeg(w.ReliabilityExp)
	w.FailureCost = nonNeg(w.FailureCost)
	w.HostPremium = nonNeg(w.HostPremium)
	w.ExcludeBelowPrior = nonNeg(w.ExcludeBelowPrior)
	w.ProbationGPUHours = nonNeg(w.ProbationGPUHours)
	w.RTTPerMs = nonNeg(w.RTTPerMs)
	w.LocalityBonus = nonNeg(w.LocalityBonus)
	w.NearBonus = min(nonNeg(w.NearBonus), maxNearBonus)
	w.UnknownRTT = max(w.UnknownRTT, 0)
	w.ColdStartCharge = nonNeg(w.ColdStartCharge)
	return w
}

// MatchInput is everything the matcher looks at. Nothing in it is changed.
type MatchInput struct {
	RFQ   *RFQ
	RFQID string // record ID of the RFQ; every bid must name it
	// Bids have had their signatures verified by the caller, so Provider
	// is the signer. Indices in the Plan refer to this slice.
	Bids []*Bid
	// Reputation maps provider peer IDs to reliability 0..1; providers
	// missing from it get Prior.
	Reputation map[string]float64
	Prior      float64
	// RTT maps provider peer IDs to the measured round-trip time. A
	// provider with no entry passes the MaxRTTMs filter (the renter has
	// not measured it, which is not evidence it is far) but is scored at
	// MaxRTTMs, or Weights.UnknownRTT when the RFQ sets none.
	RTT map[string]time.Duration
	// Declined lists providers that declined (or timed out on) an award
	// for this RFQ; their bids lose with RejectDeclined. Re-running Match
	// with the decliner added is how an award passes to the next best.
	Declined map[string]bool
	// Unbacked maps providers whose capacity record does not back their
	// bid to the reason (BidBacking); their bids lose with
	// RejectUnbacked. nil: bids are not checked against records.
	Unbacked map[string]string
	Now      time.Time
	Weights  Weights
	// ReserveMicro caps the PaySecond clearing price per GPU model slug
	// (for instance the price index median), so a thin market does not
	// clear at the renter's maximum; never below a winner's own bid.
	ReserveMicro map[string]uint64
	// Terms are the lease terms this renter accepts; a bid whose terms
	// fall outside them loses with RejectTerms. Nil accepts any terms
	// within the protocol's bounds.
	Terms *TermsLimits
	// ModelHosts maps providers to what their capacity records say about
	// RFQ.Model (ModelHostOf). A provider missing from it is cold at
	// DefaultModelBandwidthMbps. Unused when the RFQ names no model.
	ModelHosts map[string]ModelHost
}

// Plan is the matcher's decision.
type Plan struct {
	// Allocations are the winners in rank order; their GPUs sum to exactly
	// RFQ.Resources.GPUs, or there are none.
	Allocations []Allocation
	// Losers holds every bid that did not win, ordered by BidIndex, each
	// with one reason. Feasible losers (RejectOutranked, RejectUnfilled)
	// are also in Backups.
	Losers []Rejection
	// Unfilled says why there is no plan; empty when filled.
	Unfilled string
	// Backups are the feasible bids not awarded, best first.
	Backups []int
	// ClearingPriceMicro is the uniform price under PaySecond (0 under
	// PayBid or when unfilled).
	ClearingPriceMicro uint64
}

// Allocation is one winning bid and the GPUs taken from it.
type Allocation struct {
	BidIndex int
	Provider string
	// GPUs are the first len(GPUs) UUIDs of the bid, in its order: all of
	// them, or a prefix for the last host of a micro-pool.
	GPUs []string
	// PriceMicro is what the renter pays, uUSD per GPU-hour.
	PriceMicro     uint64
	EffectivePrice float64
	// ColdStart is the download of the RFQ's model the winner needs
	// first (0: warm, or no model named), charged in EffectivePrice.
	ColdStart time.Duration
}

// Rejection is why a bid did not win.
type Rejection struct {
	BidIndex int
	Provider string
	Code     string // one of the Reject* constants
	Reason   string // for people: the numbers behind the code
}

// candidate is a feasible bid with its score.
type candidate struct {
	idx  int
	bid  *Bid
	eff  float64
	gpus int
	// The parts of eff, for scoring a pool as a whole: reliability, the
	// RTT charge, the locality factor and the cold-start share.
	rel, rttCost, locality, coldShare float64
	coldStart                         time.Duration
}

// Match filters, scores, selects and prices in.Bids for in.RFQ.
//
// Selection without Weights.RankPools: if a feasible bid can hold all the
// GPUs, the best-ranked such bid wins alone (DESIGN.md §6: pool only "when
// one host cannot hold the job"). Otherwise a micro-pool takes GPUs from
// the best-ranked bids in turn, and a prefix of the last bid's GPUs so the
// total is exact. With RankPools, every single host that can hold the job
// and two pools (best-ranked bids first; largest bids first) compete by
// total effective cost: the GPUs' prices under the pool's reliability
// (the product of its members'), plus RTT, less locality, times
// 1 + HostPremium per extra host; the cheapest plan wins, fewer hosts on a
// tie. Bids rank by effective price, then more GPUs first (at equal cost,
// fewer hosts), then provider ID, then index; the result does not depend
// on the order of in.Bids beyond the indices it reports.
//
// Pricing: under PayBid (or an unknown rule) each winner is paid its own
// price. Under PaySecond the winners of one GPU model are paid one
// clearing price: the asked price of the best-ranked feasible loser of
// that model (the next such bid that would have been taken), else the
// model's ReserveMicro, else the RFQ's maximum; capped at the reserve and
// the maximum, and raised to the model's highest winning bid. One model's
// price is never paid for another.
func Match(in MatchInput) Plan {
	var p Plan
	if in.RFQ == nil {
		p.Unfilled = "no RFQ"
		for i, b := range in.Bids {
			p.Losers = append(p.Losers, Rejection{BidIndex: i, Provider: provider(b), Code: RejectNoRFQ, Reason: "no RFQ to match against"})
		}
		return p
	}
	w := in.Weights.sanitized()
	latest := latestBids(in)
	cands := make([]candidate, 0, len(in.Bids))
	p.Losers = make([]Rejection, 0, len(in.Bids))
	f := newFilter(in)
	for i, b := range in.Bids {
		code, reason := f.check(i, b, latest)
		if code != "" {
			p.Losers = append(p.Losers, Rejection{BidIndex: i, Provider: provider(b), Code: code, Reason: reason})
			continue
		}
		cands = append(cands, f.candidate(i, b, w))
	}
	slices.SortFunc(cands, compareCandidates)
	filtered := p.Losers
	p.Losers = nil
	p.selectAndPrice(in, w, cands)
	p.Losers = mergeLosers(filtered, p.Losers)
	return p
}

// mergeLosers merges the filtered bids (in index order already) with the
// feasible losers (in rank order) into one list ordered by index. With
// thousands of bids a merge is much cheaper than sorting the whole list.
// It merges from the back into filtered's spare capacity when there is
// enough (Match sizes it for every bid).
func mergeLosers(filtered, feasible []Rejection) []Rejection {
	if len(feasible) == 0 {
		return filtered
	}
	slices.SortFunc(feasible, func(a, b Rejection) int { return cmp.Compare(a.BidIndex, b.BidIndex) })
	i, j := len(filtered)-1, len(feasible)-1
	out := slices.Grow(filtered, len(feasible))[:len(filtered)+len(feasible)]
	for k := len(out) - 1; j >= 0; k-- {
		if i >= 0 && out[i].BidIndex > feasible[j].BidIndex {
			out[k] = out[i]
			i--
		} else {
			out[k] = feasible[j]
			j--
		}
	}
	return out
}

func compareCandidates(a, b candidate) int {
	if c := cmp.Compare(a.eff, b.eff); c != 0 {
		return c
	}
	if c := cmp.Compare(b.gpus, a.gpus); c != 0 {
		return c
	}
	if c := strings.Compare(a.bid.Provider, b.bid.Provider); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

func (p *Plan) unfilled(cands []candidate, why string) {
	p.Unfilled = why
	for _, c := range cands {
		p.Backups = append(p.Backups, c.idx)
		p.Losers = append(p.Losers, Rejection{BidIndex: c.idx, Provider: c.bid.Provider, Code: RejectUnfilled, Reason: why})
	}
}

func provider(b *Bid) string {
	if b == nil {
		return ""
	}
	return b.Provider
}

// PlanDelta returns what must be awarded to move from prev to next after a
// re-run (for instance with a decliner added to MatchInput.Declined): each
// allocation of next minus the GPUs prev already gave the same provider.
// Allocations that did not change are left out; one that grew comes back
// with only its added GPUs, at next's price.
func PlanDelta(prev, next Plan) []Allocation {
	var out []Allocation
	for _, a := range next.Allocations {
		var had []string
		for _, o := range prev.Allocations {
			if o.Provider == a.Provider {
				had = o.GPUs
				break
			}
		}
		var added []string
		for _, g := range a.GPUs {
			if !slices.Contains(had, g) {
				added = append(added, g)
			}
		}
		if len(added) > 0 {
			a.GPUs = added
			out = append(out, a)
		}
	}
	return out
}
