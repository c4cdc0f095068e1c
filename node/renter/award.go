package renter

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// maxAwardAttempts bounds how often one auction passes an award on after
// declines and timeouts.
const maxAwardAttempts = 8

// awarderDeps are what the awarder needs of the room.
type awarderDeps struct {
	log  *slog.Logger
	now  func() time.Time
	key  crypto.PrivKey
	self peer.ID
	// p2p sends awards, publishes award summaries and holds the measured
	// RTTs (its peerstore).
	p2p    *p2p.Node
	leases *lease.Book
	jobs   *jobTracker
	rep    Reputation
	// inflight are the awards sent and not yet countersigned (the job
	// server reads them); avoid the providers each job avoids.
	inflight *inflightAwards
	avoid    *avoidList
	// record fetches a provider's current capacity record, which must
	// back its bid (Deps.ProviderRecord); nil: bids are not checked.
	record func(ctx context.Context, id peer.ID) (*auction.Capacity, error)
	// priceIndex gives second-price RFQs their reserve (Deps.PriceIndex);
	// nil: none.
	priceIndex func(since, until time.Time) ([]auction.PriceStat, error)
	// measuredRTT is a bidder's round trip as the renter measured it in a
	// recent bid window (rttProber.measured); nil or not ok: the
	// peerstore's estimate.
	measuredRTT func(p peer.ID) (time.Duration, bool)
}

// awarder turns an auction's bids into countersigned leases: the pure
// matcher's plan, award offers, and the award passed to the next-best
// bid when a winner declines.
type awarder struct {
	awarderDeps
	reliabilityPrior float64 // Config.ReliabilityPrior
	goldNeedsBadge   bool    // Config.GoldNeedsBadge
	// terms are the lease terms this renter accepts of a bid ([attest]).
	terms auction.TermsLimits
}

// award runs the matcher over the collected bids and turns the plan into
// leases: for a replicated job (a total over 1) one lease per replica
// want names, each on an independent host (awardReplicas). With leases
// the job runs; without any, unfilled says why.
func (ar *awarder) award(ctx context.Context, pa *pendingAuction, bids []*auction.Bid, bidIDs []string, want replicaAward) (leases []*store.Lease, unfilled string) {
	jobID := pa.jobID
	bidders := auction.Bidders(bids) // vouched for in the award summaries (issue 23)
	bids, bidIDs = ar.avoid.filter(jobID, bids, bidIDs)
	bids, bidIDs = ar.badgeFilter(jobID, pa.rfq.Tier, bids, bidIDs)
	if len(bids) == 0 {
		return nil, "no bidder holds the reputation badge the tier needs (see idlegrid rep)"
	}
	unbacked, records := ar.unbacked(ctx, jobID, bids)
	pa.modelHosts = modelHostsOf(pa.rfq.Model, records)
	pa.waitPings()
	if want.total > 1 {
		leases, unfilled = ar.awardReplicas(ctx, pa, bids, bidIDs, unbacked, records, want)
	} else {
		leases, unfilled = ar.awardPlan(ctx, pa, bids, bidIDs, unbacked, nil, map[string]bool{})
	}
	if len(leases) == 0 {
		return nil, unfilled
	}
	if _, err := ar.jobs.setState(jobID, lease.JobRunning, "running", "%d lease(s) countersigned", len(leases)); err != nil {
		ar.log.Warn("job state", "job", jobID, "err", err)
	}
	for _, l := range leases {
		ar.publishSummary(ctx, l, bidders, pa.shards, pa.topics)
	}
	return leases, ""
}

// awardPlan turns the matcher's plan over bids into leases. A winner that
// declines or does not answer is dropped and the matcher runs again over
// the remaining bids, so the award passes to the next-best; GPUs already
// leased in a micro-pool stay leased and only the rest is re-matched.
// A replica (non-nil) ranks a host that holds the whole job above any
// pool (a replica's bids all can) and is recorded on its lease. excluded
// are the providers not to offer an award again (they declined or hold
// one); awardPlan adds to it.
func (ar *awarder) awardPlan(ctx context.Context, pa *pendingAuction, bids []*auction.Bid, bidIDs []string, unbacked map[string]string, replica *replicaOf, excluded map[string]bool) (leases []*store.Lease, unfilled string) {
	jobID := pa.jobID
	rfq := *pa.rfq
	reserves := ar.reserves(&rfq)
	need := rfq.Resources.GPUs
	// A CPU-only job (no GPU) is filled by one lease on a CPU share.
	cpuOnly := need == 0
	for attempt := 0; attempt < maxAwardAttempts && (need > 0 || cpuOnly && len(leases) == 0); attempt++ {
		var remaining []*auction.Bid
		var remainingIDs []string
		for i, b := range bids {
			if !excluded[b.Provider] {
				remaining = append(remaining, b)
				remainingIDs = append(remainingIDs, bidIDs[i])
			}
		}
		rfq.Resources.GPUs = need
		in := ar.matchInput(&rfq, pa.rfqID, remaining)
		in.Unbacked = unbacked
		in.ModelHosts = pa.modelHosts
		in.ReserveMicro = reserves
		in.Weights.RankPools = in.Weights.RankPools && replica == nil
		plan := auction.Match(in)
		for _, l := range plan.Losers {
			ar.log.Debug("bid lost", "job", jobID, "provider", l.Provider, "code", l.Code, "reason", l.Reason)
		}
		if attempt == 0 {
			ar.noteColdLosers(jobID, &rfq, plan)
		}
		if plan.Unfilled != "" {
			if len(leases) == 0 {
				return nil, "no plan: " + plan.Unfilled + lossSummary(plan)
			}
			ar.jobs.event(jobID, "partial", "only part of the pool could be leased: %s", plan.Unfilled)
			break
		}
		for i, alloc := range plan.Allocations {
			bid := remaining[alloc.BidIndex]
			l, offered, err := ar.offerAward(ctx, pa.jobID, &rfq, pa.rfqID, bid, remainingIDs[alloc.BidIndex], alloc, uint32(i+1), uint32(len(plan.Allocations)), replica)
			if err != nil {
				excluded[bid.Provider] = true
				ar.jobs.notes(jobID, []store.JobEvent{offered, {Kind: "decline",
					Message: fmt.Sprintf("%s did not take the award: %v; passing it on", lease.Short(bid.Provider), err)}}, nil)
				continue
			}
			excluded[bid.Provider] = true // it holds what it took
			leases = append(leases, l)
			need -= uint32(len(l.GPUs))
			msg := fmt.Sprintf("lease %s: %s on %s at %s/GPU-h", lease.Short(l.ID), words.Plural(len(l.GPUs), "GPU"), lease.Short(l.Provider), lease.USD(l.PriceMicro))
			if cpuOnly {
				msg = fmt.Sprintf("lease %s: %d cores, %d MiB RAM (CPU-only) on %s at %s/h", lease.Short(l.ID), l.CPUCores, l.RAMMiB, lease.Short(l.Provider), lease.USD(l.PriceMicro))
			}
			msg += modelNote(&rfq, alloc)
			// Dated when the lease was stored, both sides' signatures on
			// it, not when the job record's turn came.
			ar.jobs.notes(jobID, []store.JobEvent{offered, {AtMs: l.UpdatedAtMs, Kind: "lease", Message: msg}},
				func(j *store.Job) { j.Leases = append(j.Leases, l.ID) })
		}
	}
	if len(leases) == 0 {
		return nil, "every winner declined"
	}
	if need > 0 {
		ar.jobs.event(jobID, "partial", "%s still missing after %d award attempts; running on what was leased", words.Plural(int(need), "GPU"), maxAwardAttempts)
	}
	return leases, ""
}

// badgeFilter drops the bids of providers whose reputation badge does not
// open the RFQ's tier (gold needs the gold badge when
// market.gold_needs_badge is on); a new provider still wins bronze and
// silver work.
func (ar *awarder) badgeFilter(jobID string, tier auction.Tier, bids []*auction.Bid, ids []string) ([]*auction.Bid, []string) {
	if tier != auction.TierGold || !ar.goldNeedsBadge {
		return bids, ids
	}
	var kb []*auction.Bid
	var ki []string
	for i, b := range bids {
		if badge := ar.rep.Of(b.Provider).Badge; badge.Allows(string(tier)) {
			kb, ki = append(kb, b), append(ki, ids[i])
		} else {
			ar.log.Debug("bid ignored: badge", "job", jobID, "provider", b.Provider, "badge", badge)
		}
	}
	if d := len(bids) - len(kb); d > 0 {
		ar.jobs.event(jobID, "badge", "%d bid(s) from providers without the gold badge ignored", d)
	}
	return kb, ki
}

// lossSummary says why bids lost, grouped by reason code, so an unfilled
// job tells the renter what to change (price, reliability, region...).
func lossSummary(plan auction.Plan) string {
	if len(plan.Losers) == 0 {
		return ""
	}
	count := map[string]int{}
	example := map[string]string{}
	var codes []string
	for _, l := range plan.Losers {
		if count[l.Code] == 0 {
			codes = append(codes, l.Code)
			example[l.Code] = l.Reason
		}
		count[l.Code]++
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d× %s (%s)", count[c], c, example[c])
	}
	return "; bids lost: " + strings.Join(parts, ", ")
}

// MatchWeights are the matcher weights of every award; auction/sim's
// idlegrid-node row replays the same (a test in package node checks).
func MatchWeights() auction.Weights { return auction.DefaultWeights() }

func (ar *awarder) matchInput(rfq *auction.RFQ, rfqID string, bids []*auction.Bid) auction.MatchInput {
	// Measured RTTs are used only where the RFQ makes RTT matter (a bound
	// or near regions): that is where the award waited for the pings. In
	// any other auction some bidders would be measured and some not yet,
	// and the unmeasured ones, charged the unknown-RTT guess, lost to
	// dearer measured ones (the cheapest provider lost a first auction).
	rtt := map[string]time.Duration{}
	for _, b := range bids {
		if !rttMatters(rfq) {
			break
		}
		id, err := peer.Decode(b.Provider)
		if err != nil {
			continue
		}
		if ar.measuredRTT != nil {
			if d, ok := ar.measuredRTT(id); ok {
				rtt[b.Provider] = d
				continue
			}
		}
		if d := ar.p2p.Host().Peerstore().LatencyEWMA(id); d > 0 {
			rtt[b.Provider] = d
		}
	}
	return auction.MatchInput{
		RFQ: rfq, RFQID: rfqID, Bids: bids,
		Reputation: ar.rep.Scores(), Prior: ar.reliabilityPrior,
		RTT: rtt, Now: ar.now(), Weights: MatchWeights(), Terms: &ar.terms,
	}
}

// reserveIndexFor is how far back the price index looks for a
// second-price reserve: the window the providers' scarcity cap reads.
const reserveIndexFor = 24 * time.Hour

// reserves is rfq's default second-price reserve per model, from the
// price index (auction.SecondPriceReserves); nil under first price or
// without an index. A job spec has no reserve of its own to prefer.
func (ar *awarder) reserves(rfq *auction.RFQ) map[string]uint64 {
	if ar.priceIndex == nil || rfq.Pricing != auction.PaySecond {
		return nil
	}
	now := ar.now()
	stats, err := ar.priceIndex(now.Add(-reserveIndexFor), now)
	if err != nil {
		ar.log.Warn("price index for the second-price reserve", "err", err)
		return nil
	}
	return auction.SecondPriceReserves(rfq, stats)
}
