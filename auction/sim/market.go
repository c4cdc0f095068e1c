package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// The market policies run the real auction: every candidate provider
// quotes with auction.Quote, the renter matches with auction.Match.

type marketKind int

const (
	marketIdlegrid marketKind = iota
	marketPriceOnly
	marketLegacy
)

type market struct {
	kind    marketKind
	weights auction.Weights
	// bounded: providers bid only when auction's bid selection picks
	// them (bounded.go); view is built on the first RFQ.
	bounded bool
	view    *bidView
	stats   bidStats
	bids    []*auction.Bid
	// noReserve leaves second-price RFQs without the default reserve
	// (the node before issue 27).
	noReserve bool
	rep       map[string]float64
	byPeer    map[string]*provider
	// wantBids is the bounded RFQ's want_bids over all its shards; node
	// is the node's defaults for the idlegrid-node row (node.go).
	wantBids int
	node     *NodePolicy
	// calendarBlind: bounded bidding as before issue 27 (bounded.go).
	calendarBlind bool
	// lotted splits bounded bidding's shards into Config.Lots lots
	// (idlegrid-lots, bounded.go).
	lotted bool
}

func newMarket(k marketKind) *market {
	m := &market{kind: k, rep: map[string]float64{}, byPeer: map[string]*provider{}, wantBids: auction.DefaultWantBids}
	switch k {
	case marketIdlegrid:
		m.weights = auction.DefaultWeights()
	case marketPriceOnly:
		m.weights = auction.PriceOnlyWeights()
	case marketLegacy:
		m.weights = auction.Weights{ReliabilityExp: 1}
	}
	return m
}

// bidStats counts a market's RFQs and bids: feasible is what the
// providers' digests showed could serve each RFQ (for bounded bidding)
// or the candidates asked (everyone bids). Of the RFQs some host could
// take (asked), starved drew no bid, and turnoutSum adds up each one's
// bids over the bids it could have drawn, min(want_bids, such hosts),
// at most 1.
type bidStats struct {
	// reach counts the providers on the topics each RFQ went to (bounded
	// bidding): each of them received it; phantoms the phantoms among
	// each RFQ's expected bidders (Config.Phantoms).
	rfqs, bids, feasible, reach, phantoms int
	asked, starved                        int
	turnoutSum                            float64
}

// turnout counts an RFQ that drew bids bids when takers hosts could take
// its job and its renter wanted want.
func (st *bidStats) turnout(bids, takers, want int) {
	if takers == 0 {
		return
	}
	st.asked++
	if bids == 0 {
		st.starved++
	}
	st.turnoutSum += min(1, float64(bids)/float64(min(takers, want)))
}

// wantFor is how many bids the renter wants for j: every host for
// everyone-bids, else want_bids by the job's GPUs (auction.WantBidsFor;
// the calendar-blind rule, the same for every job).
func (m *market) wantFor(j *jobState) int {
	switch {
	case !m.bounded:
		return math.MaxInt
	case m.calendarBlind:
		return auction.WantBidsFor(m.wantBids, 1)
	}
	return auction.WantBidsFor(m.wantBids, uint32(j.GPUs))
}

func (m *market) bidStats() bidStats { return m.stats }

// indexAlpha is the weight of each award in the price index's moving
// average.
const indexAlpha = 0.05

func (m *market) place(w *World, j *jobState) ([]Take, error) {
	now := w.nowTime()
	rfqID := fmt.Sprintf("rfq-%d-%d", j.ID, j.attempt)
	if j.canaryOf != nil {
		rfqID = "canary-" + rfqID
	}
	rfq := &auction.RFQ{
		V: auction.MessagesVersion, Renter: "renter", JobCID: rfqID, IssuedAtMs: now.UnixMilli(),
		Resources: auction.Resources{GPUs: uint32(j.GPUs), Models: j.Models},
		Tier:      j.Tier, MaxPriceMicro: j.maxPrice,
		ExpectedDurationSec: uint64(j.DurationSec), MaxDurationSec: uint64(j.DurationSec),
		Pricing: w.cfg.Pricing,
	}
	pol := w.cfg.Bid
	if m.node != nil {
		pol = m.node.Bid
	}
	if m.kind == marketLegacy {
		pol.ScarcityK = 0
	}
	m.bids = m.bids[:0]
	clear(m.rep)
	// idlegrid scores newcomers like the market they join (see
	// reputation.Running.Overall); the legacy market and the node use the
	// fixed prior.
	prior := w.cfg.Reputation.Prior
	if m.node != nil {
		prior = m.node.Reputation.Prior
	} else if m.kind == marketIdlegrid {
		prior = w.rep.Overall(now)
	}
	util := w.utilization(j.allowed)
	cands := w.candidates(j)
	feasible, takers := len(cands), len(cands)
	if m.bounded {
		if m.view == nil {
			v, err := newBidView(w)
			if err != nil {
				return nil, err
			}
			m.view = v
		}
		var err error
		var lots lotSplit
		if m.lotted {
			lots = lotSplit{n: w.cfg.Lots, perRFQ: w.cfg.LotsPerRFQ, seen: w.cfg.LotsSeen, renter: fmt.Sprintf("renter-%d-%d", w.seed, j.ID)}
		}
		var reach, phantoms int
		if cands, feasible, reach, phantoms, err = m.view.bidders(w, rfq, rfqID, cands, m.wantBids, lots, w.cfg.VerifyBidders, m.calendarBlind); err != nil {
			return nil, err
		}
		m.stats.reach += reach
		m.stats.phantoms += phantoms
	}
	m.stats.rfqs++
	m.stats.feasible += feasible
	for _, p := range cands {
		in := auction.QuoteInput{RFQ: rfq, RFQID: rfqID, Capacity: p.cap, Now: now, Policy: pol}
		if m.kind != marketLegacy {
			in.Market = &auction.MarketSignal{Utilization: util, IndexMicro: uint64(w.index[p.model()])}
		}
		q, err := auction.Quote(in)
		if err != nil {
			continue // a refusal is the provider's answer, not a replay error
		}
		b := q.Bid
		m.bids = append(m.bids, &b)
		m.stats.bids++
		m.byPeer[p.cap.Peer] = p
		if m.kind != marketPriceOnly {
			m.rep[p.cap.Peer] = w.rep.ScoreWithPrior(p.cap.Peer, now, prior)
		}
	}
	m.stats.turnout(len(m.bids), takers, m.wantFor(j))
	if len(m.bids) == 0 {
		return nil, nil
	}
	in := auction.MatchInput{
		RFQ: rfq, RFQID: rfqID, Bids: m.bids, Reputation: m.rep, Prior: prior,
		Now: now.Add(time.Millisecond), Weights: m.weights,
	}
	if m.kind == marketIdlegrid && !m.noReserve {
		in.ReserveMicro = auction.SecondPriceReserves(rfq, w.indexStats(rfq.Tier))
	}
	plan := auction.Match(in)
	if plan.Unfilled != "" {
		return nil, nil
	}
	takes := make([]Take, 0, len(plan.Allocations))
	for _, a := range plan.Allocations {
		p := m.byPeer[a.Provider]
		t := Take{Prov: p.idx, PriceMicro: a.PriceMicro}
		for _, u := range a.GPUs {
			g, ok := p.uuid[u]
			if !ok {
				return nil, fmt.Errorf("sim: award names GPU %q not on %s", u, a.Provider)
			}
			t.GPUs = append(t.GPUs, g)
		}
		takes = append(takes, t)
		model := p.model()
		if v := w.index[model]; v == 0 {
			w.index[model] = float64(a.PriceMicro)
		} else {
			w.index[model] = v + indexAlpha*(float64(a.PriceMicro)-v)
		}
	}
	return takes, nil
}

// indexStats is the replay's price index in the shape the node's renter
// reads (auction.PriceStats): the moving average of each model's awards
// stands in for the median of tier.
func (w *World) indexStats(tier auction.Tier) []auction.PriceStat {
	stats := make([]auction.PriceStat, 0, len(w.index))
	for model, v := range w.index {
		stats = append(stats, auction.PriceStat{Model: model, Tier: tier, Awards: 1, GPUs: 1, MedianMicro: uint64(v)})
	}
	return stats
}

// utilization is the market signal: the busy share of every GPU for rent
// now that could serve a job accepting models (a flexible job's scarcity
// is the whole pool's). A host outside its calendar counts for nothing,
// as auction.Digest.Load counts it for the node's signal: its GPUs are
// neither busy nor idle.
func (w *World) utilization(models []string) float64 {
	busy, total := 0, 0
	now := w.nowTime()
	for _, model := range models {
		if !w.calendars {
			busy += w.busyByModel[model]
			total += w.totalByModel[model]
			continue
		}
		for _, i := range w.byModel[model] {
			p := w.provs[i]
			if _, open := p.cap.WindowAt(now); open {
				busy += len(p.cap.GPUs) - p.free
				total += len(p.cap.GPUs)
			}
		}
	}
	return float64(busy) / float64(max(total, 1))
}
