package renter

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
)

// The renter measures each bidder's round-trip time with libp2p ping while
// the bid window is open, so the matcher's RTT term and an RFQ's max_rtt
// rest on measurements rather than the unknown-RTT guess.
const (
	// rttFresh: a provider measured this recently is not pinged again.
	rttFresh = time.Minute
	// rttSamples round trips make one measurement.
	rttSamples = 3
	// rttTimeout bounds one measurement.
	rttTimeout = 2 * time.Second
	// rttParallel pings run at once, over all auctions.
	rttParallel = 8
	// rttWait is how long past its window an auction whose RFQ bounds the
	// RTT or names near regions waits for pings still running.
	rttWait = 500 * time.Millisecond
	// rttRemembered bounds the providers remembered as measured.
	rttRemembered = 4096
)

// rttProber runs the pings and remembers whom it measured when.
type rttProber struct {
	measure func(ctx context.Context, p peer.ID, samples int) (time.Duration, error)
	// background starts a ping on the room's context (background.Go).
	background func(fn func(ctx context.Context)) error
	sem        chan struct{}

	mu   sync.Mutex
	last map[peer.ID]time.Time
}

func newRTTProber(measure func(context.Context, peer.ID, int) (time.Duration, error), background func(func(context.Context)) error) *rttProber {
	return &rttProber{measure: measure, background: background, sem: make(chan struct{}, rttParallel), last: map[peer.ID]time.Time{}}
}

// due reports whether p should be measured now, and if so marks it.
func (r *rttProber) due(p peer.ID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.last[p]; ok && now.Sub(at) < rttFresh {
		return false
	}
	if len(r.last) >= rttRemembered {
		for q, at := range r.last {
			if now.Sub(at) >= rttFresh {
				delete(r.last, q)
			}
		}
		if len(r.last) >= rttRemembered {
			return false // a flood of fresh bidders: they keep the guess
		}
	}
	r.last[p] = now
	return true
}

// probe measures p (the result lands in the peerstore). A failed ping
// only leaves p unmeasured: a bid is not refused for it.
func (r *rttProber) probe(ctx context.Context, p peer.ID) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-r.sem }()
	ctx, cancel := context.WithTimeout(ctx, rttTimeout)
	defer cancel()
	_, _ = r.measure(ctx, p, rttSamples)
}

// measureBidder starts measuring a bidder of pa, unless it was measured
// recently; the auction can wait for it (waitPings).
func (r *rttProber) measureBidder(pa *pendingAuction, p peer.ID) {
	if !r.due(p, time.Now()) {
		return
	}
	pa.pings.Add(1)
	if err := r.background(func(ctx context.Context) {
		defer pa.pings.Done()
		r.probe(ctx, p)
	}); err != nil {
		pa.pings.Done()
	}
}

// waitPings waits, at most rttWait, for the auction's pings when its RFQ
// makes RTT matter: a bound to enforce or near regions to prefer.
func (pa *pendingAuction) waitPings() {
	if !rttMatters(pa.rfq) {
		return
	}
	done := make(chan struct{})
	go func() { pa.pings.Wait(); close(done) }()
	t := time.NewTimer(rttWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// rttMatters: the RFQ bounds the RTT or names near regions.
func rttMatters(r *auction.RFQ) bool { return r.MaxRTTMs > 0 || len(r.Near) > 0 }
