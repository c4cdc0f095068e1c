package renter

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// awardValidity is how long a provider has to countersign an award.
const awardValidity = 10 * time.Second

// award runs the matcher over the collected bids and turns the plan into
// leases. A winner that declines or does not answer is dropped and the
// matcher runs again over the remaining bids, so the award passes to the
// next-best; GPUs already leased in a micro-pool stay leased and only the
// rest is re-matched.
func (a *Renter) award(ctx context.Context, pa *pendingAuction, spec *auction.JobSpec, bids []*auction.Bid, bidIDs []string, round int) {
	jobID := pa.jobID
	if len(bids) == 0 {
		a.unfilled(ctx, jobID, spec, round, a.explainNoBids(ctx, pa.rfq))
		return
	}
	bids, bidIDs = a.avoidFilter(jobID, bids, bidIDs)
	bids, bidIDs = a.badgeFilter(jobID, pa.rfq.Tier, bids, bidIDs)
	if len(bids) == 0 {
		a.unfilled(ctx, jobID, spec, round, "no bidder holds the reputation badge the tier needs (see idlegrid rep)")
		return
	}
	a.waitRTT(pa)
	rfq := *pa.rfq
	need := rfq.Resources.GPUs
	// A CPU-only job (no GPU) is filled by one lease on a CPU share.
	cpuOnly := need == 0
	var leases []*store.Lease
	excluded := map[string]bool{}
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
		plan := auction.Match(a.matchInput(&rfq, pa.rfqID, remaining))
		for _, l := range plan.Losers {
			a.log.Debug("bid lost", "job", jobID, "provider", l.Provider, "code", l.Code, "reason", l.Reason)
		}
		if plan.Unfilled != "" {
			if len(leases) == 0 {
				a.unfilled(ctx, jobID, spec, round, "no plan: "+plan.Unfilled+lossSummary(plan))
				return
			}
			a.jobs.event(jobID, "partial", "only part of the pool could be leased: %s", plan.Unfilled)
			break
		}
		for i, alloc := range plan.Allocations {
			bid := remaining[alloc.BidIndex]
			l, err := a.offerAward(ctx, pa.jobID, &rfq, pa.rfqID, bid, remainingIDs[alloc.BidIndex], alloc, uint32(i+1), uint32(len(plan.Allocations)))
			if err != nil {
				excluded[bid.Provider] = true
				a.jobs.event(jobID, "decline", "%s did not take the award: %v; passing it on", lease.Short(bid.Provider), err)
				continue
			}
			excluded[bid.Provider] = true // it holds what it took
			leases = append(leases, l)
			need -= uint32(len(l.GPUs))
			msg := fmt.Sprintf("lease %s: %s on %s at %s/GPU-h", lease.Short(l.ID), words.Plural(len(l.GPUs), "GPU"), lease.Short(l.Provider), lease.USD(l.PriceMicro))
			if cpuOnly {
				msg = fmt.Sprintf("lease %s: %d cores, %d MiB RAM (CPU-only) on %s at %s/h", lease.Short(l.ID), l.CPUCores, l.RAMMiB, lease.Short(l.Provider), lease.USD(l.PriceMicro))
			}
			a.jobs.note(jobID, store.JobEvent{Kind: "lease", Message: msg},
				func(j *store.Job) { j.Leases = append(j.Leases, l.ID) })
		}
	}
	if len(leases) == 0 {
		a.unfilled(ctx, jobID, spec, round, "every winner declined")
		return
	}
	if need > 0 {
		a.jobs.event(jobID, "partial", "%s still missing after %d award attempts; running on what was leased", words.Plural(int(need), "GPU"), maxAwardAttempts)
	}
	if _, err := a.jobs.setState(jobID, lease.JobRunning, "running", "%d lease(s) countersigned", len(leases)); err != nil {
		a.log.Warn("job state", "job", jobID, "err", err)
	}
	for _, l := range leases {
		a.publishSummary(ctx, l, pa.rfqID)
	}
	a.watchCompletion(ctx, jobID, spec, leases, round)
}

// badgeFilter drops the bids of providers whose reputation badge does not
// open the RFQ's tier (gold needs the gold badge when
// market.gold_needs_badge is on); a new provider still wins bronze and
// silver work.
func (a *Renter) badgeFilter(jobID string, tier auction.Tier, bids []*auction.Bid, ids []string) ([]*auction.Bid, []string) {
	if tier != auction.TierGold || !a.cfg.GoldNeedsBadge {
		return bids, ids
	}
	var kb []*auction.Bid
	var ki []string
	for i, b := range bids {
		if badge := a.rep.Of(b.Provider).Badge; badge.Allows(string(tier)) {
			kb, ki = append(kb, b), append(ki, ids[i])
		} else {
			a.log.Debug("bid ignored: badge", "job", jobID, "provider", b.Provider, "badge", badge)
		}
	}
	if d := len(bids) - len(kb); d > 0 {
		a.jobs.event(jobID, "badge", "%d bid(s) from providers without the gold badge ignored", d)
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

// maxReauctions bounds the auctions of preempted work and of work whose
// provider became unreachable; reauctionBackoff
// spaces them, doubling up to reauctionMaxBackoff.
const (
	maxReauctions       = 8
	reauctionBackoff    = time.Second
	reauctionMaxBackoff = 30 * time.Second
)

// unfilled ends an auction that found no plan. A first auction reports it
// to the renter at once (a price or constraint to change). Preempted work
// is already running somewhere in the renter's plans, so its re-auction
// retries with backoff: GPUs held by other bids or leases free up soon.
func (a *Renter) unfilled(ctx context.Context, jobID string, spec *auction.JobSpec, round int, reason string) {
	if round == 0 || round >= maxReauctions {
		a.jobs.set(jobID, lease.JobUnfilled, "unfilled", "%s", reason)
		return
	}
	wait := min(reauctionBackoff<<(round-1), reauctionMaxBackoff)
	a.jobs.event(jobID, "retry", "re-auction found no plan (%s); retrying in %s", reason, wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	a.auction(ctx, jobID, spec, round+1)
}

func (a *Renter) matchInput(rfq *auction.RFQ, rfqID string, bids []*auction.Bid) auction.MatchInput {
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
		if id, err := peer.Decode(b.Provider); err == nil {
			if d := a.p2p.Host().Peerstore().LatencyEWMA(id); d > 0 {
				rtt[b.Provider] = d
			}
		}
	}
	return auction.MatchInput{
		RFQ: rfq, RFQID: rfqID, Bids: bids,
		Reputation: a.rep.Scores(), Prior: a.cfg.ReliabilityPrior,
		RTT: rtt, Now: a.now(), Weights: auction.DefaultWeights(),
	}
}

// offerAward sends one signed award and waits for the countersignature.
func (a *Renter) offerAward(ctx context.Context, jobID string, rfq *auction.RFQ, rfqID string, bid *auction.Bid, bidID string, alloc auction.Allocation, part, parts uint32) (*store.Lease, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	now := a.now()
	aw := &auction.Award{
		V: auction.MessagesVersion, Renter: a.ID().String(), Provider: bid.Provider,
		RFQ: rfqID, Bid: bidID, JobCID: rfq.JobCID, GPUs: alloc.GPUs, PriceMicro: alloc.PriceMicro,
		Tier: rfq.Tier, MaxDurationSec: rfq.MaxDurationSec, NoticeSec: bid.NoticeSec,
		Part: part, Parts: parts, Nonce: nonce,
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(awardValidity).UnixMilli(),
	}
	raw, err := auction.SealAward(aw, a.key)
	if err != nil {
		return nil, fmt.Errorf("seal award: %w", err)
	}
	awardID := attest.RecordID(raw).String()
	provider, err := peer.Decode(bid.Provider)
	if err != nil {
		return nil, err
	}
	// The provider may ask for the job spec as soon as it countersigned,
	// before the lease below is stored.
	a.mu.Lock()
	a.inflight[awardID] = inflightAward{provider: bid.Provider, jobID: jobID}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.inflight, awardID)
		a.mu.Unlock()
	}()
	resp, err := a.p2p.Request(ctx, provider, lease.LeaseProto, raw, lease.LeaseLimits)
	if err != nil {
		return nil, fmt.Errorf("award: %w", err)
	}
	if len(resp) < 2 {
		return nil, errors.New("award: empty response")
	}
	switch resp[0] {
	case lease.TagDecline:
		d, signer, err := auction.OpenDecline(resp[1:])
		if err != nil || signer != provider || d.Award != awardID {
			return nil, fmt.Errorf("award: malformed decline: %v", err)
		}
		return nil, fmt.Errorf("declined: %s", d.Reason)
	case lease.TagAccept:
	default:
		return nil, fmt.Errorf("award: unknown response tag %q", resp[0])
	}
	acc, signer, err := auction.OpenLeaseAcceptance(resp[1:])
	if err != nil {
		return nil, fmt.Errorf("award: acceptance: %w", err)
	}
	if signer != provider || acc.Award != awardID || !sameSizedSet(acc.GPUs, aw.GPUs) {
		return nil, errors.New("award: acceptance does not match the award")
	}
	// A bid holds nothing, so the provider may have committed other GPUs
	// of the bid's model than the award named (ones taken meanwhile are
	// substituted); the lease runs on the GPUs it accepted with.
	// The provider says when the work starts (after any preemption notice
	// it owes); both sides then agree on the lease's state.
	start := time.UnixMilli(acc.StartsAtMs)
	l := &store.Lease{
		ID: awardID, Side: "renter", Award: raw, Acceptance: resp[1:], JobCID: rfq.JobCID, JobID: jobID,
		Renter: aw.Renter, Provider: aw.Provider, GPUs: acc.GPUs, PriceMicro: aw.PriceMicro, Model: bid.Model,
		Tier: string(aw.Tier), NoticeSec: aw.NoticeSec, ExpectedSec: rfq.ExpectedDurationSec, Runtime: rfq.Runtime,
		State: lease.Awarded, StartsAtMs: start.UnixMilli(),
		EndsAtMs: start.Add(time.Duration(rfq.MaxDurationSec) * time.Second).UnixMilli(),
	}
	if rfq.Resources.GPUs == 0 {
		l.CPUCores, l.RAMMiB = auction.CPUCoresOf(rfq.Resources), rfq.Resources.RAMMiB
	}
	if err := a.leases.Put(l); err != nil {
		return nil, err
	}
	return l, nil
}

// publishSummary gossips the cleared price for the market price index. It
// also tells the auction's losing bidders that it is over, so they release
// any firm holds of their bids at once instead of when the holds end.
func (a *Renter) publishSummary(ctx context.Context, l *store.Lease, rfqID string) {
	sum := &auction.AwardSummary{
		V: auction.MessagesVersion, Renter: a.ID().String(), Award: l.ID, RFQ: rfqID, Model: l.Model,
		Tier: auction.Tier(l.Tier), GPUs: uint32(len(l.GPUs)), PriceMicro: l.PriceMicro, AtMs: a.now().UnixMilli(),
	}
	raw, err := auction.SealAwardSummary(sum, a.key)
	if err != nil {
		a.log.Warn("seal award summary", "err", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.p2p.Publish(pctx, p2p.TopicAttest, raw, 0); err != nil {
		a.log.Warn("publish award summary", "err", err)
	}
}

// watchCompletion follows the job's leases until their work ends. All
// completed: the job completed. One preempted: the others are cancelled
// and the job is re-auctioned. One failed, expired or cancelled: the
// others are cancelled and the job ends with that lease's outcome.
func (a *Renter) watchCompletion(ctx context.Context, jobID string, spec *auction.JobSpec, leases []*store.Lease, round int) {
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	ended := make(chan *store.Lease, len(leases))
	for _, l := range leases {
		a.wg.Go(func() { ended <- a.followLease(fctx, l) })
		// The payer outlives the job's following: it pays for the last
		// window even when the lease's end is heard first, and stops by
		// itself once the lease ended and its chain is read.
		_ = a.background(func(ctx context.Context) { a.payLease(ctx, l) })
	}
	preempted := a.preemptions(jobID)
	live := map[string]*store.Lease{}
	for _, l := range leases {
		live[l.ID] = l
	}
	cancelOthers := func(reason string) {
		for _, l := range live {
			a.cancelLease(context.WithoutCancel(ctx), l, reason)
		}
	}
	for len(live) > 0 {
		var l *store.Lease
		select {
		case <-ctx.Done():
			return
		case l = <-ended:
		case lid := <-preempted:
			if cur, err := a.db.GetLease(lid); err == nil && live[lid] != nil {
				l = cur
			} else {
				continue
			}
		}
		if l == nil || live[l.ID] == nil {
			continue
		}
		delete(live, l.ID)
		if ctx.Err() != nil {
			return // the job was cancelled or the node stops
		}
		_ = a.background(func(ctx context.Context) { a.fetchReceipt(ctx, l) })
		switch l.State {
		case lease.Completed:
			continue
		case lease.Preempted:
			stopFollowing()
			a.jobs.set(jobID, lease.JobPreempted, "preempted", "lease %s preempted by its provider", lease.Short(l.ID))
			cancelOthers("sibling lease preempted; job re-auctioned")
			if !a.cfg.Reauction {
				a.jobs.set(jobID, lease.JobFailed, "failed", "preempted and market.reauction is off")
				return
			}
			a.jobs.set(jobID, lease.JobAuctioning, "reauction", "re-auctioning the preempted work")
			a.auction(ctx, jobID, spec, round+1)
			return
		case lease.Failed:
			movable := strings.HasPrefix(l.Reason, reasonUnreachable) || strings.HasPrefix(l.Reason, reasonUnhealthy)
			if !movable || !a.cfg.Reauction || round+1 >= maxReauctions {
				break
			}
			stopFollowing()
			a.avoidProvider(jobID, l.Provider)
			cancelOthers("sibling lease's provider unreachable or unhealthy; job re-auctioned")
			a.jobs.set(jobID, lease.JobAuctioning, "reauction", "lease %s: %s; re-auctioning the work", lease.Short(l.ID), l.Reason)
			a.auction(ctx, jobID, spec, round+1)
			return
		}
		switch l.State {
		case lease.Completed, lease.Preempted:
		default:
			stopFollowing()
			cancelOthers(fmt.Sprintf("sibling lease %s", l.State))
			state := lease.JobFailed
			switch l.State {
			case lease.Expired:
				state = lease.JobExpired
			case lease.Cancelled:
				state = lease.JobCancelled
			}
			a.jobs.set(jobID, state, state, "lease %s %s: %s", lease.Short(l.ID), l.State, l.Reason)
			return
		}
	}
	a.jobs.set(jobID, lease.JobCompleted, "completed", "%s", completionSummary(leases, a.db))
}

// completionSummary says how a completed job's leases ended.
func completionSummary(leases []*store.Lease, db *store.DB) string {
	if len(leases) == 1 {
		if l, err := db.GetLease(leases[0].ID); err == nil && l.OutputCID != "" {
			return fmt.Sprintf("exited 0; output %s (a %d-byte tar)", l.OutputCID, l.OutputSize)
		}
		return "exited 0"
	}
	return fmt.Sprintf("all %d leases exited 0", len(leases))
}

// sameSizedSet reports whether an acceptance's GPUs can stand for an
// award's: as many, each named once and none empty. Which GPUs they are is
// the provider's to say (it substitutes for GPUs taken since its bid);
// the award's price and model bind it whatever their names.
func sameSizedSet(accepted, awarded []string) bool {
	if len(accepted) != len(awarded) {
		return false
	}
	seen := make(map[string]bool, len(accepted))
	for _, g := range accepted {
		if g == "" || seen[g] {
			return false
		}
		seen[g] = true
	}
	return true
}

// avoidProvider keeps a provider that failed a job's lease (unreachable or
// unhealthy) out of the job's re-auctions.
func (a *Renter) avoidProvider(jobID, provider string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.avoid == nil {
		a.avoid = map[string]map[string]bool{}
	}
	if a.avoid[jobID] == nil {
		a.avoid[jobID] = map[string]bool{}
	}
	a.avoid[jobID][provider] = true
}

// avoidFilter drops the bids of providers the job avoids.
func (a *Renter) avoidFilter(jobID string, bids []*auction.Bid, ids []string) ([]*auction.Bid, []string) {
	a.mu.Lock()
	avoid := a.avoid[jobID]
	a.mu.Unlock()
	if len(avoid) == 0 {
		return bids, ids
	}
	var kb []*auction.Bid
	var ki []string
	for i, b := range bids {
		if !avoid[b.Provider] {
			kb, ki = append(kb, b), append(ki, ids[i])
		}
	}
	return kb, ki
}
