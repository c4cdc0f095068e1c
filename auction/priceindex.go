package auction

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// PriceStat summarises cleared prices for one GPU model and tier: the
// market price index built from gossiped AwardSummary records.
type PriceStat struct {
	Model  string
	Tier   Tier
	Awards int    // distinct awards counted (weight above zero)
	GPUs   uint64 // GPUs across them
	// Percentiles in uUSD per GPU-hour, weighted (PriceEntry): an 8-GPU
	// award counts eight times a 1-GPU one of the same evidence.
	P10Micro    uint64
	MedianMicro uint64
	P90Micro    uint64
}

// PriceEntry is one award summary with the weight its parties' evidence
// earns it, in [0, 1]: the node that builds the index judges what it knows
// of the renter and the provider (a summary's own signatures prove only
// that two keys agreed, and keys are free). Weight 0 does not count.
type PriceEntry struct {
	Summary AwardSummary
	Weight  float64
}

// PartyCapGPUs is the most GPUs one party, renter or provider, counts for
// in one model and tier of the index. A party also counts for no more
// GPUs than the median party of its side (renters, providers) in that
// group. A party over its cap has all its summaries scaled down to it, so
// one pair that trades with itself all day counts like one ordinary
// customer: the index is a vote of parties, each weighed by its evidence,
// and a minority of colluding parties cannot drag the median out of the
// range the others paid.
const PartyCapGPUs = 32

// PriceStats groups the entries with AtMs in [since, until) by model and
// tier. A zero since or until leaves that side open. Summaries repeating
// an Award ID count once (gossip delivers duplicates); of differing copies
// the earliest, then cheapest, is kept, so the result does not depend on
// input order. Entries without an award ID, with no GPUs or no weight are
// skipped. The result is ordered by model, then tier as in Tiers (gold
// first).
//
// Each summary weighs GPUs × Weight, its GPUs scaled down for a renter or
// provider over its cap in the group (PartyCapGPUs). A
// percentile q is the lowest price at which the cumulative weight reaches
// q of the total (nearest rank, no interpolation: every figure reported
// is a price someone actually paid).
func PriceStats(entries []PriceEntry, since, until time.Time) []PriceStat {
	sinceMs, untilMs := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		sinceMs = since.UnixMilli()
	}
	if !until.IsZero() {
		untilMs = until.UnixMilli()
	}
	byAward := make(map[string]PriceEntry, len(entries))
	for _, e := range entries {
		s := e.Summary
		if s.Award == "" || s.GPUs == 0 || !(e.Weight > 0) || s.AtMs < sinceMs || s.AtMs >= untilMs {
			continue
		}
		if o, ok := byAward[s.Award]; ok && cmp.Or(cmp.Compare(o.Summary.AtMs, s.AtMs), cmp.Compare(o.Summary.PriceMicro, s.PriceMicro)) <= 0 {
			continue
		}
		byAward[s.Award] = PriceEntry{Summary: s, Weight: min(e.Weight, 1)}
	}
	type key struct {
		model string
		tier  Tier
	}
	groups := map[key][]PriceEntry{}
	for _, e := range byAward {
		k := key{e.Summary.Model, e.Summary.Tier}
		groups[k] = append(groups[k], e)
	}
	out := make([]PriceStat, 0, len(groups))
	for k, es := range groups {
		ws := cappedWeights(es)
		idx := make([]int, len(es))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			return cmp.Or(cmp.Compare(es[a].Summary.PriceMicro, es[b].Summary.PriceMicro), strings.Compare(es[a].Summary.Award, es[b].Summary.Award))
		})
		st := PriceStat{Model: k.model, Tier: k.tier, Awards: len(es)}
		total := 0.0
		for i, e := range es {
			st.GPUs += uint64(e.Summary.GPUs)
			total += ws[i]
		}
		st.P10Micro = weightedPercentile(es, ws, idx, total, 0.10)
		st.MedianMicro = weightedPercentile(es, ws, idx, total, 0.50)
		st.P90Micro = weightedPercentile(es, ws, idx, total, 0.90)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b PriceStat) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), cmp.Compare(tierRank(a.Tier), tierRank(b.Tier)),
			strings.Compare(string(a.Tier), string(b.Tier)))
	})
	return out
}

// cappedWeights is each entry's GPUs, scaled to its renter's and its
// provider's cap (the smaller factor: a pair that is both parties is
// scaled once), times its Weight. The caps count GPUs, not weight, so
// parties with little evidence cannot lower the others' cap.
func cappedWeights(es []PriceEntry) []float64 {
	renter, provider := map[string]float64{}, map[string]float64{}
	for _, e := range es {
		renter[e.Summary.Renter] += float64(e.Summary.GPUs)
		provider[e.Summary.Provider] += float64(e.Summary.GPUs)
	}
	capR, capP := partyCap(renter), partyCap(provider)
	out := make([]float64, len(es))
	for i, e := range es {
		s := e.Summary
		out[i] = float64(s.GPUs) * e.Weight * min(1, capR/renter[s.Renter], capP/provider[s.Provider])
	}
	return out
}

// partyCap is PartyCapGPUs or the median party's GPUs, the smaller.
func partyCap(gpus map[string]float64) float64 {
	ts := make([]float64, 0, len(gpus))
	for _, g := range gpus {
		ts = append(ts, g)
	}
	slices.Sort(ts)
	return min(PartyCapGPUs, ts[(len(ts)-1)/2])
}

// weightedPercentile returns the lowest price (in idx order, ascending)
// whose cumulative weight reaches q of total. The comparison allows for
// float rounding, so integer weights give the exact nearest rank.
func weightedPercentile(es []PriceEntry, ws []float64, idx []int, total, q float64) uint64 {
	cum := 0.0
	for _, i := range idx {
		cum += ws[i]
		if cum >= q*total*(1-1e-12) {
			return es[i].Summary.PriceMicro
		}
	}
	return es[idx[len(idx)-1]].Summary.PriceMicro
}

// tierRank orders known tiers as Tiers does and unknown ones after them.
func tierRank(t Tier) int {
	if i := slices.Index(Tiers, t); i >= 0 {
		return i
	}
	return len(Tiers)
}
