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

// rttProber runs the pings and remembers whom it measured when, and what
// it found.
type rttProber struct {
	measure func(ctx context.Context, p peer.ID, samples int) (time.Duration, error)
	// background starts a ping on the room's context (background.Go).
	background func(fn func(ctx context.Context)) error
	sem        chan struct{}

	mu   sync.Mutex
	last map[peer.ID]rttEntry
}

// rttEntry is a provider's last measurement: when it started, and its
// mean round trip (0 until one answered).
type rttEntry struct {
	at  time.Time
	rtt time.Duration
}

func newRTTProber(measure func(context.Context, peer.ID, int) (time.Duration, error), background func(func(context.Context)) error) *rttProber {
	return &rttProber{measure: measure, background: background, sem: make(chan struct{}, rttParallel), last: map[peer.ID]rttEntry{}}
}

// measured is p's round trip as this prober last measured it, while that
// measurement is fresh. The matcher takes it over the peerstore's
// estimate, an average that moves a tenth of the way to each new sample:
// three samples of a path that went from 0 to 80 ms read 25 ms there, and
// a provider behind 80 ms passed a 30 ms bound in the auction after the
// one that measured it (TestPlacementByRTTAndNearRegions, once awards no
// longer waited seconds for DHT lookups in between).
func (r *rttProber) measured(p peer.ID) (time.Duration, bool) {
	now := time.Now() // the clock measureBidder marks with
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.last[p]
	return e.rtt, ok && e.rtt > 0 && now.Sub(e.at) < rttFresh
}

// due reports whether p should be measured now, and if so marks it.
func (r *rttProber) due(p peer.ID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.last[p]
	if ok && now.Sub(e.at) < rttFresh {
		return false
	}
	if len(r.last) >= rttRemembered {
		for q, e := range r.last {
			if now.Sub(e.at) >= rttFresh {
				delete(r.last, q)
			}
		}
		if len(r.last) >= rttRemembered {
			return false // a flood of fresh bidders: they keep the guess
		}
	}
	// A measurement under way is no answer yet: until it lands, the
	// provider counts as unmeasured.
	r.last[p] = rttEntry{at: now}
	return true
}

// probe measures p and remembers the result (it lands in the
// peerstore's estimate too). A failed ping only leaves p unmeasured: a bid
// is not refused for it.
func (r *rttProber) probe(ctx context.Context, p peer.ID) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-r.sem }()
	ctx, cancel := context.WithTimeout(ctx, rttTimeout)
	defer cancel()
	d, err := r.measure(ctx, p, rttSamples)
	if err != nil || d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.last[p]; ok {
		e.rtt = d
		r.last[p] = e
	}
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
