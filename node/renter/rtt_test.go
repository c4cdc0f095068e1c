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
