package node

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

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrJobActive is returned when a spec is submitted while the same job
// (same spec CID) is still running.
var ErrJobActive = errors.New("job is already active")

// maxAwardAttempts bounds how often one auction passes an award on after
// declines and timeouts.
const maxAwardAttempts = 8

// auctioneer is the renter's side of the reverse auction: it turns job
// specs into signed RFQs, collects bids, runs the pure matcher, and turns
// the plan into countersigned leases, passing an award to the next-best
// bid when a winner declines or does not answer.
type auctioneer struct {
	n    *Node
	log  *slog.Logger
	jobs *jobTracker
	now  func() time.Time

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
	// payers: per lease, closed when its payer returned (renter_pay.go).
	payers map[string]chan struct{}
	wg     sync.WaitGroup
	ctx    context.Context // set by run; background auctions live on it
}

// pendingAuction collects the bids of one open RFQ.
type pendingAuction struct {
	rfq      *auction.RFQ
	rfqID    string
	jobID    string
	bids     []*auction.Bid
	bidIDs   []string
	answered map[string]bool
	expected map[string]bool // nil until the market view is known
	early    chan struct{}   // closed when every expected provider answered
	closed   bool
	firstBid store.JobEvent // the first bid's event, stored when the window closes
}

func newAuctioneer(n *Node, jobs *jobTracker) *auctioneer {
	return &auctioneer{
		n: n, log: n.log.With("component", "auctioneer"), jobs: jobs, now: time.Now,
		pending: map[string]*pendingAuction{}, inflight: map[string]inflightAward{},
		cancels:   map[string]*jobRun{},
		downloads: &downloads{dir: filepath.Join(n.workDir, "downloads"), per: map[string]*sync.Mutex{}},
	}
}

// run keeps the auctioneer's context for background auctions until ctx
// ends, then waits for them.
func (a *auctioneer) run(ctx context.Context) {
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()
	a.resumeJobs(ctx)
	<-ctx.Done()
	a.wg.Wait()
}

// background starts fn on the auctioneer's context.
func (a *auctioneer) background(fn func(ctx context.Context)) error {
	a.mu.Lock()
	ctx := a.ctx
	a.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return errors.New("the node is not running")
	}
	a.wg.Go(func() { fn(ctx) })
	return nil
}

// Submit validates a YAML job spec, records the job and starts its
// auction. Nothing is published for a spec that fails validation.
func (a *auctioneer) Submit(specYAML []byte) (*store.Job, error) {
	spec, err := auction.ParseJobSpec(specYAML)
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	jobCID, err := spec.CID()
	if err != nil {
		return nil, err
	}
	id := jobCID.String()
	now := a.now().UnixMilli()
	job := &store.Job{ID: id, Name: spec.Name, Spec: specYAML, State: JobAuctioning, CreatedAtMs: now, UpdatedAtMs: now}
	if err := a.jobs.create(job); err != nil {
		existing, gerr := a.n.db.GetJob(id)
		if gerr != nil {
			return nil, err
		}
		if !terminalJob(existing.State) {
			return nil, fmt.Errorf("job %s: %w (state %s)", id, ErrJobActive, existing.State)
		}
		// The same spec again after it ended: run it again.
		if _, err := a.jobs.setState(id, JobAuctioning, "resubmitted", "job submitted again"); err != nil {
			return nil, err
		}
	}
	if err := a.background(func(ctx context.Context) {
		a.runJob(ctx, id, func(ctx context.Context) { a.auction(ctx, id, spec, 0) })
	}); err != nil {
		return nil, err
	}
	return a.n.db.GetJob(id)
}

// resumeJobs picks up the jobs a restart interrupted: auctions run again,
// running jobs wait for their leases again, and preempted work is
// re-auctioned.
func (a *auctioneer) resumeJobs(ctx context.Context) {
	jobs, err := a.n.db.Jobs()
	if err != nil {
		a.log.Warn("resume jobs", "err", err)
		return
	}
	for _, j := range jobs {
		if terminalJob(j.State) {
			continue
		}
		spec, err := auction.ParseJobSpec(j.Spec)
		if err != nil {
			_, _ = a.jobs.setState(j.ID, JobFailed, "failed", "stored spec no longer parses: %v", err)
			continue
		}
		switch j.State {
		case JobRunning:
			var leases []*store.Lease
			for _, id := range j.Leases {
				if l, err := a.n.db.GetLease(id); err == nil && !terminalLease(l.State) {
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
		if _, err := a.jobs.setState(j.ID, JobAuctioning, "", ""); err != nil {
			continue
		}
		a.wg.Go(func() { a.runJob(ctx, j.ID, func(ctx context.Context) { a.auction(ctx, j.ID, spec, 0) }) })
	}
}

// auction runs one reverse auction for a job: RFQ, bid window, matching,
// awards. round counts re-auctions after preemption.
func (a *auctioneer) auction(ctx context.Context, jobID string, spec *auction.JobSpec, round int) {
	n := a.n
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		_, _ = a.jobs.setState(jobID, JobFailed, "failed", "nonce: %v", err)
		return
	}
	rfq, err := spec.RFQ(n.ID(), nonce, a.now())
	if err != nil {
		_, _ = a.jobs.setState(jobID, JobFailed, "failed", "build RFQ: %v", err)
		return
	}
	for _, addr := range n.P2PAddrs() {
		if len(rfq.Addrs) < auction.MaxRFQAddrs {
			rfq.Addrs = append(rfq.Addrs, addr)
		}
	}
	raw, err := auction.SealRFQ(rfq, n.key)
	if err != nil {
		_, _ = a.jobs.setState(jobID, JobFailed, "failed", "seal RFQ: %v", err)
		return
	}
	rfqID := attest.RecordID(raw).String()
	pa := &pendingAuction{rfq: rfq, rfqID: rfqID, jobID: jobID, answered: map[string]bool{}, early: make(chan struct{})}
	a.mu.Lock()
	a.pending[rfqID] = pa
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.pending, rfqID)
		a.mu.Unlock()
	}()
	_, _ = a.jobs.update(jobID, store.JobEvent{Kind: "rfq", Message: fmt.Sprintf("RFQ %s published (round %d), bid window %dms", short(rfqID), round+1, rfq.BidWindowMs)},
		func(j *store.Job) { j.RFQs = append(j.RFQs, rfqID) })

	go a.expectProviders(ctx, pa)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = n.p2p.Publish(pctx, p2p.TopicRFQ, raw, 1)
	cancel()
	if err != nil {
		_, _ = a.jobs.setState(jobID, JobFailed, "failed", "publish RFQ: %v", err)
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
	ev := store.JobEvent{Kind: "window", Message: fmt.Sprintf("%s with %d bids", how, len(bids)), Bids: len(bids)}
	for _, b := range bids {
		if ev.BestPriceMicro == 0 || b.PriceMicro < ev.BestPriceMicro {
			ev.BestPriceMicro = b.PriceMicro
		}
	}
	_, _ = a.jobs.update(jobID, ev, nil)
	a.award(ctx, pa, spec, bids, bidIDs, round)
}

// expectProviders computes which providers the market view expects to
// answer, so the bid window can close as soon as all of them have.
func (a *auctioneer) expectProviders(ctx context.Context, pa *pendingAuction) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(pa.rfq.BidWindowMs)*time.Millisecond)
	defer cancel()
	offers, _, _, err := a.n.market.offers(ctx)
	if err != nil {
		return
	}
	expected := map[string]bool{}
	for _, o := range offers {
		if auction.CouldBid(pa.rfq, o.Capacity) && o.Capacity.Peer != a.n.ID().String() {
			expected[o.Capacity.Peer] = true
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pa.expected = expected
	a.maybeCloseEarly(pa)
}

// maybeCloseEarly closes the window once every expected provider
// answered. Callers hold a.mu.
func (a *auctioneer) maybeCloseEarly(pa *pendingAuction) {
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

// handleBid receives a sealed bid over BidProto.
func (a *auctioneer) handleBid(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	bid, signer, err := auction.OpenBid(req)
	if err != nil {
		return nil, err
	}
	if signer != from {
		return nil, fmt.Errorf("bid signed by %s but sent by %s", signer, from)
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
		Message: fmt.Sprintf("bid from %s: %s/GPU-h for %d GPUs", short(bid.Provider), usdString(bid.PriceMicro), len(bid.GPUs)),
		Bids:    len(pa.bids), BestPriceMicro: best,
	}
	jobID := pa.jobID
	if len(pa.bids) == 1 {
		ev.AtMs = a.now().UnixMilli()
		pa.firstBid = ev
	}
	a.maybeCloseEarly(pa)
	a.mu.Unlock()
	// Bids are shown live only; the job's history keeps the first one
	// (when the market answered) and the "window" event their count and
	// best price, written in order when the window closes.
	a.jobs.notify(jobID, ev)
	return bidAck, nil
}

func short(id string) string {
	if len(id) > 14 {
		return id[len(id)-8:]
	}
	return id
}

func usdString(micro uint64) string { return fmt.Sprintf("$%.4f", float64(micro)/1e6) }
