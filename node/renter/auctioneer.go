package renter

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

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
	// offers, shards, rfqTopics and expectBidders are the market view (Deps).
	offers        func(ctx context.Context) ([]query.Offer, error)
	shards        func(r *auction.RFQ) []auction.Shard
	rfqTopics     func(r *auction.RFQ, shards []auction.Shard, everyone bool) []auction.ShardTopic
	expectBidders func(r *auction.RFQ, rfqID string, topics []auction.ShardTopic) map[string]bool
}

// auctioneer runs a job's reverse auctions: it builds and publishes the
// RFQ, keeps its bid window open (closing it early once every expected
// bidder answered) and hands the bids to the awarder; a job's first
// auction that finds no plan is run again until the job's wait is over
// (auctioneer_wait.go), a re-auction of running work after its backoff.
type auctioneer struct {
	auctioneerDeps
	wantBids int // over all of an RFQ's shards (Config.WantBids)
	// maxWait is Config.MaxWait; waitPace spaces all waiting jobs' tries.
	maxWait  time.Duration
	waitPace *rate.Limiter
	awarder  *awarder
	// silence remembers shards whose expected bidders stayed silent or
	// that had no subscriber (silence.go); nil: remembers nothing.
	silence *shardSilence
}

// run runs a reverse auction for a job: RFQ, bid window, matching,
// awards of the replicas want names (wholeJob: all of them; a lost
// replica alone), and again while no plan is found and the job may wait
// (auctioneer_wait.go). round counts re-auctions after preemption or a
// lost provider. A non-nil paced is a wait its caller keeps across tries
// and ends itself (newPacedWait: a replicated service's slot, a lost
// replica's replacement), so it never ends the job: one try per call, the
// caller spacing them out. It returns the countersigned leases, none when
// the job ended (unfilled, failed), ctx did, or a paced try found no
// plan.
//
// When the providers the market view expected stayed silent and no bid
// came, the auction runs once more at once asking every provider
// (auction.EveryoneBids) rather than ending unfilled; so does the next
// RFQ on the same shards for a while (shardSilence).
func (au *auctioneer) run(ctx context.Context, jobID string, spec *auction.JobSpec, round int, want replicaAward, paced *waitState) []*store.Lease {
	w := paced
	if w == nil {
		w = au.waitFor(jobID, spec, round)
	}
	for {
		leases, again, silent := au.runOnce(ctx, jobID, spec, round, want, nil, w)
		if silent != nil {
			leases, again, _ = au.runOnce(ctx, jobID, spec, round, want, silent, w)
		}
		if len(leases) > 0 || !again || w.paced {
			return leases
		}
	}
}

// runOnce is one RFQ and its bid window. A non-nil skip asks every
// provider to bid and does not wait for the providers in it (those silent
// in the round it runs again). It returns the silent providers of an
// auction that got no bid while its expected bidders stayed silent, to be
// run again asking everyone.
func (au *auctioneer) runOnce(ctx context.Context, jobID string, spec *auction.JobSpec, round int, want replicaAward, skip map[string]bool, w *waitState) (leases []*store.Lease, again bool, silent map[string]bool) {
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
	clampStartBy(rfq, w)
	for _, addr := range au.p2p.P2PAddrs() {
		if len(rfq.Addrs) < auction.MaxRFQAddrs {
			rfq.Addrs = append(rfq.Addrs, addr)
		}
	}
	shards := au.shardsFor(ctx, rfq)
	everyone = everyone || (au.silence != nil && au.silence.everyone(shards, au.now()))
	// An RFQ asking everyone goes to the shards' own topics and every lot
	// the renter follows; another may go to lots of a shard.
	topics := auction.ShardRFQTopics(shards)
	if au.rfqTopics != nil {
		topics = au.rfqTopics(rfq, shards, everyone)
	}
	// A job of many GPUs wants more bids than one of a single GPU, and
	// each replica of a batch job needs its own from an independent host
	// (a lost one's re-auction gets bids from the others' too); they are
	// split over the topics, each an auction of its own members.
	rfq.WantBids = auction.RFQWantBids(au.wantBids, rfq.Resources.GPUs, want.total, len(topics))
	if everyone {
		rfq.WantBids = auction.EveryoneBids
	}
	raw, err := auction.SealRFQ(rfq, au.key)
	if err != nil {
		au.jobs.set(jobID, lease.JobFailed, "failed", "seal RFQ: %v", err)
		return nil, false, nil
	}
	rfqID := attest.RecordID(raw).String()
	pa := newPendingAuction(rfq, rfqID, jobID, shards)
	pa.topics = topics
	pa.skip = skip
	au.bids.open(pa)
	defer au.bids.forget(rfqID)
	asked := ""
	if everyone {
		asked = ", asking every provider to bid"
	}
	au.progress(jobID, w, store.JobEvent{Kind: "rfq", Message: fmt.Sprintf("RFQ %s published (round %d), bid window %dms%s", lease.Short(rfqID), round+1, rfq.BidWindowMs, asked)},
		func(j *store.Job) { addRFQ(j, rfqID) })

	go au.expectProviders(ctx, pa)
	if err := au.publish(ctx, raw, topics); err != nil {
		// No shard had a subscriber: nobody could bid. The market view
		// says why in the user's terms; the p2p detail goes to the log.
		au.log.Info("RFQ not published", "job", jobID, "err", err)
		if ctx.Err() != nil {
			return nil, false, nil
		}
		return nil, au.wait(ctx, jobID, "no provider took the RFQ: "+au.explainNoBids(ctx, rfq), w), nil
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
		au.progress(jobID, w, store.JobEvent{Kind: "retry", Message: fmt.Sprintf("none of the %s the market view expected bid; asking every provider", words.Plural(expected, "provider"))}, nil)
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
	au.progress(jobID, w, ev, nil)
	leases, again = au.award(ctx, pa, bids, bidIDs, want, w)
	return leases, again, nil
}

// award has the awarder turn an auction's bids into leases; an auction
// that found none waits for its next try or ends the job unfilled
// (auctioneer.wait).
func (au *auctioneer) award(ctx context.Context, pa *pendingAuction, bids []*auction.Bid, bidIDs []string, want replicaAward, w *waitState) (leases []*store.Lease, again bool) {
	if len(bids) == 0 {
		return nil, au.wait(ctx, pa.jobID, au.explainNoBids(ctx, pa.rfq), w)
	}
	leases, unfilled := au.awarder.award(ctx, pa, bids, bidIDs, want)
	if len(leases) == 0 {
		return nil, au.wait(ctx, pa.jobID, unfilled, w)
	}
	return leases, false
}

// expectProviders computes which providers the market view expects to
// answer, so the bid window can close as soon as all of them have.
func (au *auctioneer) expectProviders(ctx context.Context, pa *pendingAuction) {
	var expected map[string]bool
	if au.expectBidders != nil {
		// The digests' selection rule: the providers that will bid.
		expected = au.expectBidders(pa.rfq, pa.rfqID, pa.topics)
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

// maxReauctions bounds how often one job's work is auctioned again after
// a preemption or a lost provider.
const maxReauctions = 8

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
