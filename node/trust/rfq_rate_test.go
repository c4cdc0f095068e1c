package trust

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestRenterRateBurstThenRate: a renter gets its burst at once, then one
// RFQ per 1/rate; another renter's bucket is its own.
func TestRenterRateBurstThenRate(t *testing.T) {
	r := newRenterRate(rfqRatePerSec, rfqRateBurst, rfqRateRenter)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range rfqRateBurst {
		if !r.allow("a", t0) {
			t.Fatalf("RFQ %d of the burst refused", i+1)
		}
	}
	if r.allow("a", t0) {
		t.Fatalf("RFQ %d at once allowed, burst is %d", rfqRateBurst+1, rfqRateBurst)
	}
	if !r.allow("b", t0) {
		t.Fatal("another renter limited by the first one's RFQs")
	}
	step := time.Second / rfqRatePerSec
	if r.allow("a", t0.Add(step/2)) {
		t.Fatal("allowed before a token refilled")
	}
	if !r.allow("a", t0.Add(step)) {
		t.Fatalf("refused %s later, at %d RFQs/s", step, rfqRatePerSec)
	}
}

// TestRenterRateIsBounded: at most renters buckets are kept; the least
// recently seen is forgotten first (and starts over with a full burst).
func TestRenterRateIsBounded(t *testing.T) {
	r := newRenterRate(1, 1, 3)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 3 {
		r.allow(fmt.Sprint(i), t0) // each uses its one token
	}
	r.allow("0", t0) // 0 is now the most recent; 1 the least
	r.allow("new", t0)
	if n := r.tracked(); n != 3 {
		t.Fatalf("%d renters tracked, bound 3", n)
	}
	if r.allow("0", t0) {
		t.Fatal("renter 0 was forgotten although seen recently")
	}
	if !r.allow("1", t0) {
		t.Fatal("renter 1, the least recently seen, was not forgotten")
	}
}

// TestRFQValidatorRateLimitsPerRenter: past its burst a renter's fresh,
// valid RFQs are ignored at the validator (no penalty); another renter's
// pass.
func TestRFQValidatorRateLimitsPerRenter(t *testing.T) {
	// A rate far below the test's duration: only the burst counts.
	n := &RFQGate{seen: auction.NewSeenCache(16), rate: newRenterRate(1e-3, 2, 16), now: time.Now}
	ctx := context.Background()
	sk, _, _ := crypto.GenerateEd25519Key(nil)
	other, _, _ := crypto.GenerateEd25519Key(nil)
	renter, _ := peer.IDFromPrivateKey(sk)
	honest, _ := peer.IDFromPrivateKey(other)
	now := time.Now()
	want := []p2p.Verdict{p2p.Accept, p2p.Accept, p2p.Ignore, p2p.Ignore}
	for i, w := range want {
		raw := sealTestRFQ(t, sk, now.Add(time.Duration(i)*time.Millisecond))
		if got := n.validate(ctx, renter, renter, raw); got != w {
			t.Fatalf("RFQ %d: verdict %v, want %v", i+1, got, w)
		}
	}
	if got := n.validate(ctx, honest, honest, sealTestRFQ(t, other, now)); got != p2p.Accept {
		t.Fatalf("another renter's RFQ: verdict %v, want Accept", got)
	}
}
