package renter

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// auctioneerDeps are what the auctioneer needs of the room.
type auctioneerDeps struct {
	log  *slog.Logger
	now  func() time.Time
	key  crypto.PrivKey
	self peer.ID
	// p2p publishes RFQs and lists the addresses they carry.
	p2p  *p2p.Node
	jobs *jobTracker
	bids *bidWindows
	// offers, shards and expectBidders are the market view (Deps).
	offers        func(ctx context.Context) ([]query.Offer, error)
	shards        func(r *auction.RFQ) []auction.Shard
	expectBidders func(r *auction.RFQ, rfqID string, shards []auction.Shard) map[string]bool
}

// auctioneer runs a job's reverse auctions: it builds and publishes the
// RFQ, keeps its bid window open (closing it early once every expected
// bidder answered) and hands the bids to the awarder; an auction that
// finds no plan is reported, or retried when it re-auctions running work.
type auctioneer struct {
	auctioneerDeps
	wantBids int // over all of an RFQ's shards (Config.WantBids)
	awarder  *awarder
	// silence remembers shards whose expected bidders stayed silent or
	// that had no subscriber (silence.go); nil: remembers nothing.
	silence *shardSilence
}

// run runs one reverse auction for a job: RFQ, bid window, matching,
// awards of the replicas want names (wholeJob: all of them; a lost
// replica alone). round counts re-auctions after preemption. It returns the
// countersigned leases; without any, again reports that the auction is
// to run once more (round+1) after its backoff.
//
// When the providers the market view expected stayed silent and no bid
// came, the auction runs once more at once asking every provider
// (auction.EveryoneBids) rather than ending unfilled; so does the next
// RFQ on the same shards for a while (shardSilence).
func (au *auctioneer) run(ctx context.Context, jobID string, spec *auction.JobSpec, round int, want replicaAward) (leases []*store.Lease, again bool) {
	leases, again, silent := au.runOnce(ctx, jobID, spec, round, want, nil)
	if silent == nil {
		return leases, again
	}
	leases, again, _ = au.runOnce(ctx, jobID, spec, round, want, silent)
	return leases, again
}

// runOnce is one RFQ and its bid window. A non-nil skip asks every
// provider to bid and does not wait for the providers in it (those silent
// in the round it runs again). It returns the silent providers of an
// auction that got no bid while its expected bidders stayed silent, to be
// run again asking everyone.
func (au *auctioneer) runOnce(ctx context.Context, jobID string, spec *auction.JobSpec, round int, want replicaAward, skip map[string]bool) (leases []*store.Lease, again bool, silent map[string]bool) {
	everyone := skip != nil
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		au.jobs.set(jobID, lease.JobFailed, "failed", "nonce: %v", err)
		return nil, false, nil
	}
	rfq, err := spec.RFQ(au.self, nonce, au.now())
	if err != nil {
		au.jobs.set(jobID, lease.JobFailed, "failed", "build RFQ: %v", err)
		return nil, false, nil
	}
	for _, addr := range au.p2p.P2PAddrs() {
		if len(rfq.Addrs) < auction.MaxRFQAddrs {
			rfq.Addrs = append(rfq.Addrs, addr)
		}
	}
	shards := au.shardsFor(ctx, rfq)
	// Each replica of a batch job needs its own bid from an independent
	// host (and a lost one's re-auction gets bids from the others' too).
	rfq.WantBids = wantPerShard(au.wantBids*want.total, len(shards))
	if everyone || (au.silence != nil && au.silence.everyone(shards, au.now())) {
		everyone = true
		rfq.WantBids = auction.EveryoneBids
	}
	raw, err := auction.SealRFQ(rfq, au.key)
	if err != nil {
		au.jobs.set(jobID, lease.JobFailed, "failed", "seal RFQ: %v", err)
		return nil, false, nil
	}
	rfqID := attest.RecordID(raw).String()
	pa := newPendingAuction(rfq, rfqID, jobID, shards)
	pa.skip = skip
	au.bids.open(pa)
	defer au.bids.forget(rfqID)
	au.jobs.note(jobID, store.JobEvent{Kind: "rfq", Message: fmt.Sprintf("RFQ %s published (round %d), bid window %dms", lease.Short(rfqID), round+1, rfq.BidWindowMs)},
		func(j *store.Job) { j.RFQs = append(j.RFQs, rfqID) })

	go au.expectProviders(ctx, pa)
	if err := au.publish(ctx, raw, shards); err != nil {
		// No shard had a subscriber: nobody could bid. The market view
		// says why in the user's terms; the p2p detail goes to the log.
		au.log.Info("RFQ not published", "job", jobID, "err", err)
		if ctx.Err() != nil {
			return nil, false, nil
		}
		return nil, au.unfilled(ctx, jobID, round, "no provider took the RFQ: "+au.explainNoBids(ctx, rfq)), nil
	}
	window := time.NewTimer(time.Duration(rfq.BidWindowMs) * time.Millisecond)
	defer window.Stop()
	select {
	case <-ctx.Done():
		return nil, false, nil
	case <-window.C:
	case <-pa.early:
	}
	bids, bidIDs, early := au.bids.close(pa)
	expected, answered, quiet := au.bids.turnout(pa)
	if au.silence != nil {
		au.silence.settle(shards, len(bids), expected, answered, au.now())
	}
	if len(bids) == 0 && !everyone && auction.ExpectedStayedSilent(expected, answered) {
		au.jobs.event(jobID, "retry", "none of the %s the market view expected bid; asking every provider", words.Plural(expected, "provider"))
		return nil, false, quiet
	}
	how := "bid window closed"
	switch {
	case early && expected == 0:
		how = "no provider the market view knows could bid; bid window closed early"
	case early:
		how = "every expected provider answered; bid window closed early"
	}
	if len(bids) > 0 {
		au.jobs.record(jobID, pa.firstBid) // set before the window closed
	}
	ev := store.JobEvent{Kind: "window", Message: fmt.Sprintf("%s with %s", how, words.Plural(len(bids), "bid")), Bids: len(bids)}
	for _, b := range bids {
		if ev.BestPriceMicro == 0 || b.PriceMicro < ev.BestPriceMicro {
			ev.BestPriceMicro = b.PriceMicro
		}
	}
	au.jobs.note(jobID, ev, nil)
	leases, again = au.award(ctx, pa, bids, bidIDs, round, want)
	return leases, again, nil
}

// award has the awarder turn an auction's bids into leases; an auction
// that found none ends unfilled (or retries, as run says).
func (au *auctioneer) award(ctx context.Context, pa *pendingAuction, bids []*auction.Bid, bidIDs []string, round int, want replicaAward) (leases []*store.Lease, again bool) {
	if len(bids) == 0 {
		return nil, au.unfilled(ctx, pa.jobID, round, au.explainNoBids(ctx, pa.rfq))
	}
	leases, unfilled := au.awarder.award(ctx, pa, bids, bidIDs, want)
	if len(leases) == 0 {
		return nil, au.unfilled(ctx, pa.jobID, round, unfilled)
	}
	return leases, false
}

// expectProviders computes which providers the market view expects to
// answer, so the bid window can close as soon as all of them have.
func (au *auctioneer) expectProviders(ctx context.Context, pa *pendingAuction) {
	var expected map[string]bool
	if au.expectBidders != nil {
		// The digests' selection rule: the providers that will bid.
		expected = au.expectBidders(pa.rfq, pa.rfqID, pa.shards)
	} else {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(pa.rfq.BidWindowMs)*time.Millisecond)
		defer cancel()
		offers, err := au.offers(ctx)
		if err != nil {
			return
		}
		expected = map[string]bool{}
		for _, o := range offers {
			if auction.CouldBid(pa.rfq, o.Capacity) && o.Capacity.Peer != au.self.String() {
				expected[o.Capacity.Peer] = true
			}
		}
	}
	au.bids.expect(pa, expected)
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
// It reports whether the auction is to run again.
func (au *auctioneer) unfilled(ctx context.Context, jobID string, round int, reason string) (again bool) {
	if round == 0 || round >= maxReauctions {
		au.jobs.set(jobID, lease.JobUnfilled, "unfilled", "%s", reason)
		return false
	}
	wait := min(reauctionBackoff<<(round-1), reauctionMaxBackoff)
	au.jobs.event(jobID, "retry", "re-auction found no plan (%s); retrying in %s", reason, wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	return true
}

// explainNoBids says why an auction got no bid, from the market view
// (auction.ExplainNoBids); the window alone when the view cannot be read.
func (au *auctioneer) explainNoBids(ctx context.Context, rfq *auction.RFQ) string {
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	offers, err := au.offers(ctx)
	if len(offers) == 0 && err != nil {
		au.log.Debug("market view for an unfilled auction", "err", err)
		return fmt.Sprintf("no provider bid within the %dms window (the market view could not be read: %v)", rfq.BidWindowMs, err)
	}
	rel := map[string]float64{}
	caps := make([]*auction.Capacity, 0, len(offers))
	for _, o := range offers {
		if o.Capacity != nil {
			caps = append(caps, o.Capacity)
			rel[o.Capacity.Peer] = o.Reliability
		}
	}
	return auction.ExplainNoBids(rfq, caps, func(p string) float64 { return rel[p] })
}
