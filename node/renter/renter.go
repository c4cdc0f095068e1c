// Package renter is the buyer's side of the market: it turns job specs
// into signed RFQs, runs the reverse auction (bids, the pure matcher,
// awards passed to the next-best bid on a decline), follows its leases'
// work over the job protocol (with failover and re-auction on preemption),
// pays for verified telemetry with vouchers (the payer), and fetches logs
// and results. The node routes bids, preemption notices and job-protocol
// requests to it; it knows neither the provider nor trust.
package renter

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// maxAwardAttempts bounds how often one auction passes an award on after
// declines and timeouts.
const maxAwardAttempts = 8

// Renter is the buyer's room: it turns job specs into signed RFQs,
// collects bids, runs the pure matcher and turns the plan into
// countersigned leases (passing an award to the next-best bid when a
// winner declines or does not answer), follows the leases' work, pays for
// it with vouchers, and fetches logs and results.
type Renter struct {
	cfg       Config
	log       *slog.Logger
	now       func() time.Time
	key       crypto.PrivKey
	self      peer.ID
	p2p       *p2p.Node
	db        *store.DB
	leases    *lease.Book
	artifacts *executor.DirArtifacts
	jobs      *jobTracker

	offers        func(ctx context.Context) ([]query.Offer, error)
	shards        func(r *auction.RFQ) []auction.Shard
	expectBidders func(r *auction.RFQ, rfqID string, shards []auction.Shard) map[string]bool
	rep           Reputation
	reportFraud   func(proof []byte)
	withhold      func(leaseID string) bool

	submitMu sync.Mutex // one Submit at a time (idempotency keys)

	mu      sync.Mutex
	pending map[string]*pendingAuction // by RFQ ID
	// preempted delivers, per job, the IDs of leases whose preemption
	// notice ran out.
	preempted map[string]chan string
	// inflight: awards sent and not yet countersigned, by award ID.
	inflight map[string]inflightAward
	// cancels stop a job's auction or lease following (job cancel).
	cancels   map[string]*jobRun
	downloads *downloads
	// payers: per lease, closed when its payer returned (pay.go).
	payers map[string]chan struct{}
	// avoid: per job, providers whose lease of it failed unreachable or
	// unhealthy; its re-auctions take no bid from them.
	avoid map[string]map[string]bool
	// forwards are the service forwards (forward.go); registerer gets
	// their metrics.
	forwards   forwardBook
	registerer prometheus.Registerer
	rtt        *rttProber
	wg         sync.WaitGroup
	ctx        context.Context // set by Run; background auctions live on it
}

// pendingAuction collects the bids of one open RFQ.
type pendingAuction struct {
	rfq      *auction.RFQ
	rfqID    string
	jobID    string
	shards   []auction.Shard // published on
	bids     []*auction.Bid
	bidIDs   []string
	answered map[string]bool
	expected map[string]bool // nil until the market view is known
	early    chan struct{}   // closed when every expected provider answered
	closed   bool
	firstBid store.JobEvent // the first bid's event, stored when the window closes
	pings    sync.WaitGroup // the bidders' RTT measurements (rtt.go)
}

// New builds the renter room.
func New(cfg Config, deps Deps) (*Renter, error) {
	if deps.Key == nil || deps.P2P == nil || deps.Store == nil || deps.Leases == nil || deps.Reputation == nil || deps.Offers == nil {
		return nil, errors.New("renter.New: key, p2p, store, lease book, reputation and market view are required")
	}
	a := &Renter{
		cfg: cfg, log: deps.Logger, now: deps.Clock, key: deps.Key, self: deps.P2P.ID(),
		p2p: deps.P2P, db: deps.Store, leases: deps.Leases, artifacts: deps.Artifacts,
		offers: deps.Offers, shards: deps.Shards, expectBidders: deps.ExpectBidders, rep: deps.Reputation, reportFraud: deps.ReportFraud, withhold: deps.WithholdPayment,
		registerer: deps.Registerer, rtt: newRTTProber(deps.P2P.MeasureRTT),
		pending: map[string]*pendingAuction{}, inflight: map[string]inflightAward{},
		cancels:   map[string]*jobRun{},
		downloads: &downloads{dir: filepath.Join(deps.WorkDir, "downloads"), per: map[string]*sync.Mutex{}},
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.cfg.WantBids <= 0 {
		a.cfg.WantBids = auction.DefaultWantBids
	}
	if a.reportFraud == nil {
		a.reportFraud = func([]byte) {}
	}
	a.jobs = newJobTracker(a.db, a.now, a.log.With("component", "jobs"))
	return a, nil
}

// Run resumes the jobs a restart interrupted and keeps the renter's
// context for background auctions until ctx ends, then waits for them.
func (a *Renter) Run(ctx context.Context) error {
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()
	a.resumeJobs(ctx)
	<-ctx.Done()
	a.wg.Wait()
	return nil
}

// ID is the renter's peer ID.
func (a *Renter) ID() peer.ID { return a.self }

// jobCall calls a provider's job protocol.
func (a *Renter) jobCall(ctx context.Context, to peer.ID, req *jobproto.Request) (*jobproto.Header, *p2p.Frames, error) {
	return lease.Call(ctx, a.p2p, to, req)
}

// background starts fn on the auctioneer's context.
func (a *Renter) background(fn func(ctx context.Context)) error {
	a.mu.Lock()
	ctx := a.ctx
	a.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return errors.New("the node is not running")
	}
	a.wg.Go(func() { fn(ctx) })
	return nil
}

// resumeJobs picks up the jobs a restart interrupted: auctions run again,
// running jobs wait for their leases again, and preempted work is
// re-auctioned.
func (a *Renter) resumeJobs(ctx context.Context) {
	jobs, err := a.db.Jobs()
	if err != nil {
		a.log.Warn("resume jobs", "err", err)
		return
	}
	for _, j := range jobs {
		if lease.JobState(j.State).Terminal() {
			continue
		}
		spec, err := auction.ParseJobSpec(j.Spec)
		if err != nil {
			a.jobs.set(j.ID, lease.JobFailed, "failed", "stored spec no longer parses: %v", err)
			continue
		}
		switch j.State {
		case lease.JobRunning:
			var leases []*store.Lease
			for _, id := range j.Leases {
				if l, err := a.db.GetLease(id); err == nil && !lease.State(l.State).Terminal() {
					leases = append(leases, l)
				}
			}
			if len(leases) > 0 {
				a.jobs.event(j.ID, "resumed", "following %d lease(s) again after a node restart", len(leases))
				a.wg.Go(func() {
					a.runJob(ctx, j.ID, func(ctx context.Context) { a.watchCompletion(ctx, j.ID, spec, leases, 0) })
				})
				continue
			}
			a.jobs.event(j.ID, "resumed", "no live lease left after a node restart; auctioning again")
		default:
			a.jobs.event(j.ID, "resumed", "auction restarted after a node restart")
		}
		if _, err := a.jobs.setState(j.ID, lease.JobAuctioning, "", ""); err != nil {
			continue
		}
		a.wg.Go(func() { a.runJob(ctx, j.ID, func(ctx context.Context) { a.auction(ctx, j.ID, spec, 0) }) })
	}
}

// auction runs one reverse auction for a job: RFQ, bid window, matching,
// awards. round counts re-auctions after preemption.
func (a *Renter) auction(ctx context.Context, jobID string, spec *auction.JobSpec, round int) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		a.jobs.set(jobID, lease.JobFailed, "failed", "nonce: %v", err)
		return
	}
	rfq, err := spec.RFQ(a.self, nonce, a.now())
	if err != nil {
		a.jobs.set(jobID, lease.JobFailed, "failed", "build RFQ: %v", err)
		return
	}
	for _, addr := range a.p2p.P2PAddrs() {
		if len(rfq.Addrs) < auction.MaxRFQAddrs {
			rfq.Addrs = append(rfq.Addrs, addr)
		}
	}
	shards := a.shardsFor(ctx, rfq)
	rfq.WantBids = wantPerShard(a.cfg.WantBids, len(shards))
	raw, err := auction.SealRFQ(rfq, a.key)
	if err != nil {
		a.jobs.set(jobID, lease.JobFailed, "failed", "seal RFQ: %v", err)
		return
	}
	rfqID := attest.RecordID(raw).String()
	pa := &pendingAuction{rfq: rfq, rfqID: rfqID, jobID: jobID, shards: shards, answered: map[string]bool{}, early: make(chan struct{})}
	a.mu.Lock()
	a.pending[rfqID] = pa
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.pending, rfqID)
		a.mu.Unlock()
	}()
	a.jobs.note(jobID, store.JobEvent{Kind: "rfq", Message: fmt.Sprintf("RFQ %s published (round %d), bid window %dms", lease.Short(rfqID), round+1, rfq.BidWindowMs)},
		func(j *store.Job) { j.RFQs = append(j.RFQs, rfqID) })

	go a.expectProviders(ctx, pa)
	if err := a.publish(ctx, raw, shards); err != nil {
		// No shard had a subscriber: nobody could bid. The market view
		// says why in the user's terms; the p2p detail goes to the log.
		a.log.Info("RFQ not published", "job", jobID, "err", err)
		if ctx.Err() != nil {
			return
		}
		a.unfilled(ctx, jobID, spec, round, "no provider took the RFQ: "+a.explainNoBids(ctx, rfq))
		return
	}
	window := time.NewTimer(time.Duration(rfq.BidWindowMs) * time.Millisecond)
	defer window.Stop()
	select {
	case <-ctx.Done():
		return
	case <-window.C:
	case <-pa.early:
	}
	a.mu.Lock()
	early := pa.closed
	pa.closed = true
	bids := slices.Clone(pa.bids)
	bidIDs := slices.Clone(pa.bidIDs)
	a.mu.Unlock()
	how := "bid window closed"
	if early {
		how = "every expected provider answered; bid window closed early"
	}
	if len(bids) > 0 {
		a.jobs.record(jobID, pa.firstBid)
	}
	ev := store.JobEvent{Kind: "window", Message: fmt.Sprintf("%s with %s", how, words.Plural(len(bids), "bid")), Bids: len(bids)}
	for _, b := range bids {
		if ev.BestPriceMicro == 0 || b.PriceMicro < ev.BestPriceMicro {
			ev.BestPriceMicro = b.PriceMicro
		}
	}
	a.jobs.note(jobID, ev, nil)
	a.award(ctx, pa, spec, bids, bidIDs, round)
}

// expectProviders computes which providers the market view expects to
// answer, so the bid window can close as soon as all of them have.
func (a *Renter) expectProviders(ctx context.Context, pa *pendingAuction) {
	var expected map[string]bool
	if a.expectBidders != nil {
		// The digests' selection rule: the providers that will bid.
		expected = a.expectBidders(pa.rfq, pa.rfqID, pa.shards)
	} else {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(pa.rfq.BidWindowMs)*time.Millisecond)
		defer cancel()
		offers, err := a.offers(ctx)
		if err != nil {
			return
		}
		expected = map[string]bool{}
		for _, o := range offers {
			if auction.CouldBid(pa.rfq, o.Capacity) && o.Capacity.Peer != a.ID().String() {
				expected[o.Capacity.Peer] = true
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pa.expected = expected
	a.maybeCloseEarly(pa)
}

// maybeCloseEarly closes the window once every expected provider
// answered. Callers hold a.mu.
func (a *Renter) maybeCloseEarly(pa *pendingAuction) {
	if pa.closed || pa.expected == nil || len(pa.expected) == 0 {
		return
	}
	for p := range pa.expected {
		if !pa.answered[p] {
			return
		}
	}
	pa.closed = true
	close(pa.early)
}

// handleBid receives a sealed bid over lease.BidProto.
func (a *Renter) handleBid(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	bid, signer, err := auction.OpenBid(req)
	if err != nil {
		return nil, malformed(err)
	}
	if signer != from {
		return nil, malformed(fmt.Errorf("bid signed by %s but sent by %s", signer, from))
	}
	if bid.Expired(a.now()) {
		return nil, errors.New("bid expired")
	}
	a.mu.Lock()
	pa := a.pending[bid.RFQ]
	if pa == nil || pa.closed {
		a.mu.Unlock()
		return nil, errors.New("no open auction for this RFQ")
	}
	if pa.answered[bid.Provider] {
		a.mu.Unlock()
		return nil, errors.New("one bid per provider and RFQ")
	}
	pa.answered[bid.Provider] = true
	pa.bids = append(pa.bids, bid)
	pa.bidIDs = append(pa.bidIDs, attest.RecordID(req).String())
	best := bid.PriceMicro
	for _, b := range pa.bids {
		best = min(best, b.PriceMicro)
	}
	ev := store.JobEvent{
		Kind:    "bid",
		Message: fmt.Sprintf("bid from %s: %s/GPU-h for %s", lease.Short(bid.Provider), lease.USD(bid.PriceMicro), words.Plural(len(bid.GPUs), "GPU")),
		Bids:    len(pa.bids), BestPriceMicro: best,
	}
	jobID := pa.jobID
	if len(pa.bids) == 1 {
		ev.AtMs = a.now().UnixMilli()
		pa.firstBid = ev
	}
	a.maybeCloseEarly(pa)
	a.mu.Unlock()
	a.measureBidder(pa, from)
	// Bids are shown live only; the job's history keeps the first one
	// (when the market answered) and the "window" event their count and
	// best price, written in order when the window closes.
	a.jobs.notify(jobID, ev)
	return lease.Ack, nil
}
