package renter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A provider is measured at most once per rttFresh, and a flood of fresh
// bidders cannot grow the prober's memory past rttRemembered.
func TestRTTProberMeasuresEachProviderOncePerPeriod(t *testing.T) {
	r := newRTTProber(func(context.Context, peer.ID, int) (time.Duration, error) { return 0, nil }, nil)
	now := time.Unix(1_800_000_000, 0)
	p := peer.ID("provider")
	if !r.due(p, now) {
		t.Fatal("a provider never measured is due")
	}
	if r.due(p, now.Add(rttFresh/2)) {
		t.Fatal("measured again within rttFresh")
	}
	if !r.due(p, now.Add(rttFresh)) {
		t.Fatal("not measured again after rttFresh")
	}
	for i := range 2 * rttRemembered {
		r.due(peer.ID(fmt.Sprintf("flood-%d", i)), now.Add(rttFresh))
	}
	if n := len(r.last); n > rttRemembered {
		t.Fatalf("remembers %d providers, bound %d", n, rttRemembered)
	}
	// Once the flood is stale, new providers are measured again.
	if !r.due(peer.ID("late"), now.Add(3*rttFresh)) {
		t.Fatal("stale entries were not pruned")
	}
}

// The prober remembers what it measured, for the matcher to read instead
// of the peerstore's slow average: nothing while the pings run, the mean
// once they answered, and nothing again once it is stale.
func TestRTTProberRemembersWhatItMeasured(t *testing.T) {
	pings := make(chan struct{})
	r := newRTTProber(func(ctx context.Context, _ peer.ID, samples int) (time.Duration, error) {
		<-pings
		if samples != rttSamples {
			t.Errorf("%d samples, want %d", samples, rttSamples)
		}
		return 80 * time.Millisecond, nil
	}, nil)
	p := peer.ID("far")
	if _, ok := r.measured(p); ok {
		t.Fatal("a provider never measured has a measurement")
	}
	if !r.due(p, time.Now()) {
		t.Fatal("a provider never measured is not due")
	}
	done := make(chan struct{})
	go func() { r.probe(t.Context(), p); close(done) }()
	if _, ok := r.measured(p); ok {
		t.Fatal("a measurement under way counts as one")
	}
	close(pings)
	<-done
	if d, ok := r.measured(p); !ok || d != 80*time.Millisecond {
		t.Fatalf("measured %s (%v), want 80ms", d, ok)
	}
	r.mu.Lock()
	e := r.last[p]
	e.at = e.at.Add(-rttFresh)
	r.last[p] = e
	r.mu.Unlock()
	if _, ok := r.measured(p); ok {
		t.Fatal("a stale measurement still counts")
	}
}
