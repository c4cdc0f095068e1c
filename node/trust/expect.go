package trust

import (
	"sync"
	"time"
)

// expectations remember whom each of this renter's auctions expected to
// bid, until the auction's deadline: a provider that was expected and did
// not answer misses (auction.ProviderEvidence.Missed), and after a few
// misses in a row it drops out of the expected bidders, so fresh keys
// claiming cheap GPUs and never bidding cannot hold every bid window open.
type expectations struct {
	mu  sync.Mutex
	by  map[string]*expectation
	max int
}

type expectation struct {
	deadline time.Time
	waiting  map[string]bool // expected and not answered yet
}

// maxExpectations bounds the auctions followed; the one with the nearest
// deadline is settled early when it is reached.
const maxExpectations = 4096

// expectGrace is how long after the bid window a bid still counts as an
// answer (it left the provider in time and was slowed on the way).
const expectGrace = 2 * time.Second

func newExpectations() *expectations {
	return &expectations{by: map[string]*expectation{}, max: maxExpectations}
}

// expect records that rfqID expects bids from peers until deadline. A
// second call for the same RFQ adds to it.
func (x *expectations) expect(rfqID string, peers map[string]bool, deadline time.Time) {
	if len(peers) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.by[rfqID]
	if e == nil {
		if len(x.by) >= x.max {
			x.dropNearestLocked()
		}
		e = &expectation{deadline: deadline, waiting: map[string]bool{}}
		x.by[rfqID] = e
	}
	for p := range peers {
		e.waiting[p] = true
	}
}

func (x *expectations) dropNearestLocked() {
	var nearest string
	for id, e := range x.by {
		if nearest == "" || e.deadline.Before(x.by[nearest].deadline) {
			nearest = id
		}
	}
	delete(x.by, nearest)
}

// answered marks p's bid for rfqID.
func (x *expectations) answered(rfqID, p string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.by[rfqID]; e != nil {
		delete(e.waiting, p)
	}
}

// settle ends the auctions past their deadline at now and returns the
// providers that missed them (one entry per missed auction).
func (x *expectations) settle(now time.Time) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var missed []string
	for id, e := range x.by {
		if now.Before(e.deadline) {
			continue
		}
		for p := range e.waiting {
			missed = append(missed, p)
		}
		delete(x.by, id)
	}
	return missed
}
