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
	Awards int    // distinct awards counted
	GPUs   uint64 // GPUs across them: the weight of the percentiles
	// Percentiles in uUSD per GPU-hour, weighted by GPUs, so an 8-GPU
	// award counts eight times a 1-GPU one.
	P10Micro    uint64
	MedianMicro uint64
	P90Micro    uint64
}

// PriceStats groups the summaries with AtMs in [since, until) by model and
// tier. A zero since or until leaves that side open. Summaries repeating
// an Award ID count once (gossip delivers duplicates); of differing copies
// the earliest, then cheapest, is kept, so the result does not depend on
// input order. Summaries without an award ID or with no GPUs are skipped.
// The result is ordered by model, then tier as in Tiers (gold first).
//
// A percentile q is the lowest price at which the cumulative GPU weight
// reaches q of the total (nearest rank, no interpolation: every figure
// reported is a price someone actually paid).
func PriceStats(summaries []AwardSummary, since, until time.Time) []PriceStat {
	sinceMs, untilMs := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		sinceMs = since.UnixMilli()
	}
	if !until.IsZero() {
		untilMs = until.UnixMilli()
	}
	byAward := make(map[string]AwardSummary, len(summaries))
	for _, s := range summaries {
		if s.Award == "" || s.GPUs == 0 || s.AtMs < sinceMs || s.AtMs >= untilMs {
			continue
		}
		if o, ok := byAward[s.Award]; ok && cmp.Or(cmp.Compare(o.AtMs, s.AtMs), cmp.Compare(o.PriceMicro, s.PriceMicro)) <= 0 {
			continue
		}
		byAward[s.Award] = s
	}
	type key struct {
		model string
		tier  Tier
	}
	groups := map[key][]AwardSummary{}
	for _, s := range byAward {
		k := key{s.Model, s.Tier}
		groups[k] = append(groups[k], s)
	}
	out := make([]PriceStat, 0, len(groups))
	for k, ss := range groups {
		slices.SortFunc(ss, func(a, b AwardSummary) int { return cmp.Compare(a.PriceMicro, b.PriceMicro) })
		st := PriceStat{Model: k.model, Tier: k.tier, Awards: len(ss)}
		for _, s := range ss {
			st.GPUs += uint64(s.GPUs)
		}
		st.P10Micro = weightedPercentile(ss, st.GPUs, 10)
		st.MedianMicro = weightedPercentile(ss, st.GPUs, 50)
		st.P90Micro = weightedPercentile(ss, st.GPUs, 90)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b PriceStat) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), cmp.Compare(tierRank(a.Tier), tierRank(b.Tier)),
			strings.Compare(string(a.Tier), string(b.Tier)))
	})
	return out
}

// weightedPercentile returns the lowest price of ss (sorted by price)
// whose cumulative GPUs reach pct% of total, in integers so that no
// rounding moves the boundary.
func weightedPercentile(ss []AwardSummary, total uint64, pct uint64) uint64 {
	var cum uint64
	for _, s := range ss {
		cum += uint64(s.GPUs)
		if cum*100 >= total*pct {
			return s.PriceMicro
		}
	}
	return ss[len(ss)-1].PriceMicro
}

// tierRank orders known tiers as Tiers does and unknown ones after them.
func tierRank(t Tier) int {
	if i := slices.Index(Tiers, t); i >= 0 {
		return i
	}
	return len(Tiers)
}
