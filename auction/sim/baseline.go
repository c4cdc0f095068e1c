package sim

import (
	"cmp"
	"slices"
)

// The baselines place at the providers' floors, without auctions: what a
// posted-price market or a central scheduler would do with the same
// providers and jobs.

// Policy names.
const (
	PolicyIdlegrid    = "idlegrid"            // Quote + Match with the shipped defaults
	PolicyPriceOnly   = "price-only"          // the same market, ranking by price alone
	PolicyBounded     = "idlegrid-bounded"    // idlegrid where providers bid only when auction.ShouldBid picks them (want_bids 16)
	PolicyLots        = "idlegrid-lots"       // idlegrid-bounded with every shard split into Config.Lots lots, each RFQ on Config.LotsPerRFQ of them
	PolicyLegacy      = "idlegrid-v0"         // the market before issue 11: per-host markup, price/reliability, single host first
	PolicyNoReserve   = "idlegrid-no-reserve" // idlegrid without the default second-price reserve (the node before issue 27)
	PolicyPosted      = "posted"              // first feasible provider (in table order) at its floor
	PolicyGreedy      = "greedy"              // cheapest floors first
	PolicyRandom      = "random"              // random feasible providers at their floors
	PolicyClairvoyant = "clairvoyant"         // cheapest floors first, skipping leases it knows will fail
)

var policies = map[string]func() policy{
	PolicyIdlegrid: func() policy { return newMarket(marketIdlegrid) },
	PolicyNode:     func() policy { return newNodeMarket(DefaultNodePolicy()) },
	PolicyNodeNoWait: func() policy {
		np := DefaultNodePolicy()
		np.MaxWait = 0
		return newNodeMarket(np)
	},
	PolicyNodeCalendarBlind: func() policy {
		m := newNodeMarket(DefaultNodePolicy())
		m.calendarBlind = true
		return m
	},
	PolicyPriceOnly:   func() policy { return newMarket(marketPriceOnly) },
	PolicyBounded:     func() policy { m := newMarket(marketIdlegrid); m.bounded = true; return m },
	PolicyLots:        func() policy { m := newMarket(marketIdlegrid); m.bounded, m.lotted = true, true; return m },
	PolicyLegacy:      func() policy { return newMarket(marketLegacy) },
	PolicyNoReserve:   func() policy { m := newMarket(marketIdlegrid); m.noReserve = true; return m },
	PolicyPosted:      func() policy { return baseline{order: orderTable} },
	PolicyGreedy:      func() policy { return baseline{order: orderCheapest} },
	PolicyRandom:      func() policy { return baseline{order: orderRandom} },
	PolicyClairvoyant: func() policy { return baseline{order: orderCheapest, clairvoyant: true} },
}

// AllPolicies lists the policies in report order.
func AllPolicies() []string {
	return []string{PolicyIdlegrid, PolicyNode, PolicyBounded, PolicyPriceOnly, PolicyLegacy, PolicyPosted, PolicyGreedy, PolicyRandom, PolicyClairvoyant}
}

type order int

const (
	orderTable order = iota
	orderCheapest
	orderRandom
)

// baseline fills a job from providers in its order: the first provider
// that holds the whole job alone, else GPUs from each in turn.
type baseline struct {
	order       order
	clairvoyant bool
}

func (b baseline) place(w *World, j *jobState) ([]Take, error) {
	cands := w.candidates(j)
	if b.clairvoyant {
		cands = slices.DeleteFunc(cands, func(p *provider) bool { fails, _ := w.failDraw(j, p); return fails })
	}
	switch b.order {
	case orderCheapest:
		// Cheapest floor first; at equal floors the larger host, for
		// fewer hosts per job.
		slices.SortStableFunc(cands, func(a, c *provider) int {
			return cmp.Or(cmp.Compare(a.floor(j.Tier), c.floor(j.Tier)), cmp.Compare(c.free, a.free))
		})
	case orderRandom:
		w.rng.Shuffle(len(cands), func(a, c int) { cands[a], cands[c] = cands[c], cands[a] })
	}
	if b.order != orderCheapest {
		// Posted and random take the first host that holds the job alone.
		if i := slices.IndexFunc(cands, func(p *provider) bool { return p.free >= j.GPUs }); i >= 0 {
			p := cands[i]
			return []Take{{Prov: p.idx, GPUs: p.freeGPUs(j.GPUs), PriceMicro: p.floor(j.Tier)}}, nil
		}
	}
	var takes []Take
	left := j.GPUs
	for _, p := range cands {
		if left == 0 {
			break
		}
		n := min(p.free, left)
		takes = append(takes, Take{Prov: p.idx, GPUs: p.freeGPUs(n), PriceMicro: p.floor(j.Tier)})
		left -= n
	}
	if left > 0 {
		return nil, nil
	}
	return takes, nil
}
