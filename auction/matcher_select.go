package auction

import (
	"fmt"
	"slices"
)

// The matcher's select and price stages.

// selectAndPrice chooses the winners among cands (sorted by rank) and
// prices them; see Match.
func (p *Plan) selectAndPrice(in MatchInput, w Weights, cands []candidate) {
	rfq := in.RFQ
	need := int(rfq.Resources.GPUs)
	total := 0
	for _, c := range cands {
		total += c.gpus
	}
	switch {
	case need == 0 && len(cands) > 0:
		p.selectCPU(rfq, cands) // matcher_cpu.go
		return
	case need == 0:
		p.unfilled(cands, "no feasible CPU-only bid")
		return
	case total < need:
		p.unfilled(cands, fmt.Sprintf("feasible bids offer %d of %d GPUs", total, need))
		return
	}
	var take []int // take[i] is how many GPUs cands[i] gives; 0 for a loser
	if w.RankPools {
		take = rankedPlan(cands, need, w)
	} else {
		take = legacyPlan(cands, need)
	}
	price := func(c candidate) uint64 { return c.bid.PriceMicro }
	if rfq.Pricing == PaySecond {
		clearing := secondPrices(in, cands, take)
		for _, c := range clearing {
			p.ClearingPriceMicro = max(p.ClearingPriceMicro, c)
		}
		price = func(c candidate) uint64 { return clearing[c.bid.Model] }
	}
	for i, c := range cands {
		if take[i] > 0 {
			p.Allocations = append(p.Allocations, Allocation{
				BidIndex: c.idx, Provider: c.bid.Provider,
				GPUs:       slices.Clone(c.bid.GPUs[:take[i]]),
				PriceMicro: price(c), EffectivePrice: c.eff, ColdStart: c.coldStart,
			})
			continue
		}
		p.Backups = append(p.Backups, c.idx)
		p.Losers = append(p.Losers, Rejection{BidIndex: c.idx, Provider: c.bid.Provider, Code: RejectOutranked,
			Reason: fmt.Sprintf("effective price %.0f%s ranked %d; the request was filled before it", c.eff, c.coldStartNote(rfq), i+1)})
	}
}

// legacyPlan: the best single host that holds need, else a pool of the
// best-ranked bids.
func legacyPlan(cands []candidate, need int) []int {
	take := make([]int, len(cands))
	if single := slices.IndexFunc(cands, func(c candidate) bool { return c.gpus >= need }); single >= 0 {
		take[single] = need
		return take
	}
	return fillInOrder(cands, need, nil, take)
}

// fillInOrder takes GPUs from cands in the order given (indices into
// cands; nil: rank order) until need is met.
func fillInOrder(cands []candidate, need int, order []int, take []int) []int {
	left := need
	for k := 0; left > 0 && k < len(cands); k++ {
		i := k
		if order != nil {
			i = order[k]
		}
		take[i] = min(cands[i].gpus, left)
		left -= take[i]
	}
	return take
}

// rankedPlan scores every single host that holds need and two pools (rank
// order; largest bids first) by planCost and returns the cheapest, fewer
// hosts first on a tie, then the earlier-ranked plan.
func rankedPlan(cands []candidate, need int, w Weights) []int {
	var best []int
	bestCost, bestHosts := 0.0, 0
	consider := func(take []int) {
		cost, hosts := planCost(cands, take, w)
		if best == nil || cost < bestCost || cost == bestCost && hosts < bestHosts {
			best, bestCost, bestHosts = take, cost, hosts
		}
	}
	for i, c := range cands {
		if c.gpus >= need {
			take := make([]int, len(cands))
			take[i] = need
			consider(take)
		}
	}
	consider(fillInOrder(cands, need, nil, make([]int, len(cands))))
	bySize := make([]int, len(cands))
	for i := range bySize {
		bySize[i] = i
	}
	// Stable: equal sizes keep rank order.
	slices.SortStableFunc(bySize, func(a, b int) int { return cands[b].gpus - cands[a].gpus })
	consider(fillInOrder(cands, need, bySize, make([]int, len(cands))))
	return best
}

// planCost is a plan's total effective cost and its host count: each
// member's GPUs at its price under the pool's reliability term, plus RTT,
// less locality, times the bounded host premium.
func planCost(cands []candidate, take []int, w Weights) (float64, int) {
	rel, hosts := 1.0, 0
	for i, n := range take {
		if n > 0 {
			rel *= cands[i].rel
			hosts++
		}
	}
	term := reliabilityTerm(rel, w)
	cost := 0.0
	for i, n := range take {
		if n > 0 {
			cost += cands[i].cost(float64(cands[i].bid.PriceMicro)*term, n)
		}
	}
	premium := min(w.HostPremium*float64(max(hosts-1, 0)), MaxHostPremium)
	return cost * (1 + premium), hosts
}

// secondPrices is the PaySecond clearing price for each winning model.
func secondPrices(in MatchInput, cands []candidate, take []int) map[string]uint64 {
	rfq := in.RFQ
	out := map[string]uint64{}
	for i, c := range cands {
		m := c.bid.Model
		if take[i] == 0 {
			continue
		}
		if _, done := out[m]; done {
			continue
		}
		clearing := rfq.MaxPriceMicro
		if reserve := in.ReserveMicro[m]; reserve > 0 {
			clearing = min(clearing, reserve)
		}
		for j, l := range cands {
			if take[j] == 0 && l.bid.Model == m {
				clearing = min(clearing, l.bid.PriceMicro)
				break
			}
		}
		for j, o := range cands {
			if take[j] > 0 && o.bid.Model == m {
				clearing = max(clearing, o.bid.PriceMicro)
			}
		}
		out[m] = min(clearing, rfq.MaxPriceMicro)
	}
	return out
}
