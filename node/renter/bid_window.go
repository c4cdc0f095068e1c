package renter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/store"
)

// pendingAuction collects the bids of one open RFQ. rfq, rfqID, jobID and
// shards are set when it opens; the rest is the bid windows' (under their
// lock), but pings.
type pendingAuction struct {
	rfq      *auction.RFQ
	rfqID    string
	jobID    string
	shards   []auction.Shard      // published on
	topics   []auction.ShardTopic // the shards' topics, or their lots', published on
	bids     []*auction.Bid
	bidIDs   []string
	answered map[string]bool
	expected map[string]bool // nil until the market view is known
	// skip are providers not waited for: silent in the auction this one
	// runs again (asking everyone).
	skip     map[string]bool
	early    chan struct{} // closed when every expected provider answered (or nobodyGrace passed expecting nobody)
	closed   bool
	firstBid store.JobEvent // the first bid's event, stored when the window closes
	pings    sync.WaitGroup // the bidders' RTT measurements (rtt.go)
	// modelHosts are what the bidders' records say of the RFQ's model
	// (award_model.go); nil when it names none.
	modelHosts map[string]auction.ModelHost
}

func newPendingAuction(rfq *auction.RFQ, rfqID, jobID string, shards []auction.Shard) *pendingAuction {
	return &pendingAuction{rfq: rfq, rfqID: rfqID, jobID: jobID, shards: shards, answered: map[string]bool{}, early: make(chan struct{})}
}

// bidWindowDeps are what the bid windows need of the room.
type bidWindowDeps struct {
	now func() time.Time
	// notify shows a bid live in its job's progress (jobTracker.notify).
	notify func(jobID string, ev store.JobEvent)
	// measure starts measuring a bidder's RTT for its auction
	// (rttProber.measureBidder).
	measure func(pa *pendingAuction, p peer.ID)
}

// bidWindows are the open auctions, by RFQ ID: they take the bids that
// arrive over lease.BidProto until each window closes.
type bidWindows struct {
	bidWindowDeps

	mu      sync.Mutex
	pending map[string]*pendingAuction // by RFQ ID
}

func newBidWindows(deps bidWindowDeps) *bidWindows {
	return &bidWindows{bidWindowDeps: deps, pending: map[string]*pendingAuction{}}
}

// open starts taking bids for pa.
func (w *bidWindows) open(pa *pendingAuction) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[pa.rfqID] = pa
}

// forget drops an auction whose award is done.
func (w *bidWindows) forget(rfqID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, rfqID)
}

// expect records the providers the market view expects to answer pa, so
// its window closes as soon as all of them have. A view that knows the
// shards and expects nobody (every provider that could serve is absent:
// silent, unbacked or none) closes the window after nobodyGrace, which
// leaves providers the view does not know a chance at a fraction of the
// window.
func (w *bidWindows) expect(pa *pendingAuction, expected map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if expected != nil && len(pa.skip) > 0 {
		kept := map[string]bool{}
		for p := range expected {
			if !pa.skip[p] {
				kept[p] = true
			}
		}
		expected = kept
	}
	pa.expected = expected
	w.maybeCloseEarly(pa)
	if expected != nil && len(expected) == 0 {
		time.AfterFunc(nobodyGrace(time.Duration(pa.rfq.BidWindowMs)*time.Millisecond), func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !pa.closed {
				pa.closed = true
				close(pa.early)
			}
		})
	}
}

// nobodyGrace is how long a bid window expecting nobody stays open: a
// quarter of it, at least 2 s (or the whole window when shorter).
func nobodyGrace(window time.Duration) time.Duration {
	return max(window/4, min(window, 2*time.Second))
}

// close closes pa's window and returns its bids; early reports that the
// window had closed before its end: every expected provider answered, or
// it expected nobody.
func (w *bidWindows) close(pa *pendingAuction) (bids []*auction.Bid, bidIDs []string, early bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	early = pa.closed
	pa.closed = true
	return slices.Clone(pa.bids), slices.Clone(pa.bidIDs), early
}

// turnout is how many providers pa expected (0 while the view did not
// know) and how many of them answered, and the ones that did not.
func (w *bidWindows) turnout(pa *pendingAuction) (expected, answered int, silent map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	silent = map[string]bool{}
	for p := range pa.expected {
		expected++
		if pa.answered[p] {
			answered++
		} else {
			silent[p] = true
		}
	}
	return expected, answered, silent
}

// maybeCloseEarly closes the window once every expected provider
// answered. Callers hold w.mu.
func (w *bidWindows) maybeCloseEarly(pa *pendingAuction) {
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
func (w *bidWindows) handleBid(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	bid, signer, err := auction.OpenBid(req)
	if err != nil {
		return nil, lease.Malformed(err)
	}
	if signer != from {
		return nil, lease.Malformed(fmt.Errorf("bid signed by %s but sent by %s", signer, from))
	}
	if bid.Expired(w.now()) {
		return nil, errors.New("bid expired")
	}
	w.mu.Lock()
	pa := w.pending[bid.RFQ]
	if pa == nil || pa.closed {
		w.mu.Unlock()
		return nil, errors.New("no open auction for this RFQ")
	}
	if pa.answered[bid.Provider] {
		w.mu.Unlock()
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
		ev.AtMs = w.now().UnixMilli()
		pa.firstBid = ev
	}
	w.maybeCloseEarly(pa)
	w.mu.Unlock()
	w.measure(pa, from)
	// Bids are shown live only; the job's history keeps the first one
	// (when the market answered) and the "window" event their count and
	// best price, written in order when the window closes.
	w.notify(jobID, ev)
	return lease.Ack, nil
}
