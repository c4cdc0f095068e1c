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

// TestBudgetsBurstThenRate: a key gets its burst at once, then one token
// per 1/rate; another key's bucket is its own; a token given back can be
// taken again, never beyond the burst.
func TestBudgetsBurstThenRate(t *testing.T) {
	b := newBudgets(rfqRenownedPerSec, rfqRenownedBurst, 16)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range rfqRenownedBurst {
		if !b.take(t0, "a") {
			t.Fatalf("token %d of the burst refused", i+1)
		}
	}
	if b.take(t0, "a") {
		t.Fatalf("token %d at once allowed, burst is %d", rfqRenownedBurst+1, rfqRenownedBurst)
	}
	if !b.take(t0, "b") {
		t.Fatal("another key limited by the first one's tokens")
	}
	step := time.Second / rfqRenownedPerSec
	if b.take(t0.Add(step/2), "a") {
		t.Fatal("allowed before a token refilled")
	}
	if !b.take(t0.Add(step), "a") {
		t.Fatalf("refused %s later, at %d/s", step, rfqRenownedPerSec)
	}
	b.give(t0.Add(step), "a")
	if !b.take(t0.Add(step), "a") {
		t.Fatal("a token given back could not be taken")
	}
	for range 100 {
		b.give(t0.Add(step), "c")
	}
	n := 0
	for b.take(t0.Add(step), "c") {
		n++
	}
	if n != rfqRenownedBurst {
		t.Fatalf("%d tokens after giving back 100, want the burst %d", n, rfqRenownedBurst)
	}
	// Taking from several keys takes from all or none.
	if b.take(t0.Add(step), "fresh", "c") || !b.take(t0.Add(step), "fresh") {
		t.Fatal("a refused multi-key take spent a token")
	}
}

// TestBudgetsAreBounded: at most keys buckets are kept; the least
// recently used is forgotten first (and starts over with a full burst).
func TestBudgetsAreBounded(t *testing.T) {
	b := newBudgets(1, 1, 3)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 3 {
		b.take(t0, fmt.Sprint(i)) // each uses its one token
	}
	b.take(t0, "0") // 0 is now the most recent; 1 the least
	b.take(t0, "new")
	if n := b.tracked(); n != 3 {
		t.Fatalf("%d keys tracked, bound 3", n)
	}
	if b.take(t0, "0") {
		t.Fatal("key 0 was forgotten although seen recently")
	}
	if !b.take(t0, "1") {
		t.Fatal("key 1, the least recently seen, was not forgotten")
	}
}

// TestRFQLimits: a fresh renter key gets less than a renowned one, and
// fresh renters' RFQs also spend the forwarder's and its network's
// budgets.
func TestRFQLimits(t *testing.T) {
	l := newRFQLimits()
	t0 := time.Unix(1_800_000_000, 0)
	count := func(n int, ok func() bool) int {
		got := 0
		for range n {
			if ok() {
				got++
			}
		}
		return got
	}
	if got := count(100, func() bool { return l.renter("fresh", false, t0) }); got != rfqFreshBurst {
		t.Fatalf("one fresh key: %d RFQs, want its burst %d", got, rfqFreshBurst)
	}
	if got := count(100, func() bool { return l.renter("old", true, t0) }); got != rfqRenownedBurst {
		t.Fatalf("one renowned key: %d RFQs, want %d", got, rfqRenownedBurst)
	}
	if got := count(300, func() bool { return l.entry("flooder", "net-b", t0) }); got != rfqForwarderBurst {
		t.Fatalf("fresh-key churn through one forwarder: %d RFQs, want its burst %d", got, rfqForwarderBurst)
	}
	// More forwarders in that network share its budget.
	k := 0
	if got := count(300, func() bool { k++; return l.entry(peer.ID(fmt.Sprint("flooder-", k%10)), "net-b", t0) }); got != rfqNetworkBurst-rfqForwarderBurst {
		t.Fatalf("ten forwarders in one network: %d RFQs, want the network's remaining %d", got, rfqNetworkBurst-rfqForwarderBurst)
	}
}

// TestRFQGateEntryCutsFreshKeyChurn: RFQs from a new key each, forwarded
// by one peer, are cut at entry past the forwarder's budget (uncharged,
// before gossipsub remembers them or their records' signatures are
// checked, and counted); a copy of a cut RFQ from another forwarder gets
// in, and a renter with receipts passes the spent forwarder.
func TestRFQGateEntryCutsFreshKeyChurn(t *testing.T) {
	now := time.Now()
	oldKey, _, _ := crypto.GenerateEd25519Key(nil)
	old, _ := peer.IDFromPrivateKey(oldKey)
	dropped := map[string]int{}
	g := NewRFQGate(RFQGateDeps{Now: func() time.Time { return now }, Renowned: func(r string) bool { return r == old.String() },
		Dropped: func(reason string) { dropped[reason]++ }})
	flooder := peer.ID("flooder")
	accepted, cut := 0, 0
	var lastCut []byte
	for i := range rfqForwarderBurst + 20 {
		sk, _, _ := crypto.GenerateEd25519Key(nil)
		raw := sealTestRFQ(t, sk, now.Add(time.Duration(i)*time.Millisecond))
		if g.Entry(flooder, raw) {
			accepted++
		} else {
			cut++
			lastCut = raw
		}
	}
	if accepted != rfqForwarderBurst || cut != 20 || dropped[rfqDropBudget] != 20 {
		t.Fatalf("%d let in, %d cut (%d counted); want the forwarder's burst %d let in and 20 cut", accepted, cut, dropped[rfqDropBudget], rfqForwarderBurst)
	}
	if !g.Entry(peer.ID("honest relay"), lastCut) {
		t.Fatal("a cut RFQ forwarded by another peer was cut too")
	}
	if !g.Entry(flooder, sealTestRFQ(t, oldKey, now)) {
		t.Fatal("a renowned renter through the spent forwarder was cut")
	}
}

// TestRFQValidatorRateLimitsPerRenter: past its burst a renter's fresh,
// valid RFQs are ignored at the validator; another renter's pass.
func TestRFQValidatorRateLimitsPerRenter(t *testing.T) {
	now := time.Now()
	n := NewRFQGate(RFQGateDeps{Now: func() time.Time { return now }}) // no refill during the test
	n.seen = auction.NewSeenCache(64)
	ctx := context.Background()
	sk, _, _ := crypto.GenerateEd25519Key(nil)
	other, _, _ := crypto.GenerateEd25519Key(nil)
	renter, _ := peer.IDFromPrivateKey(sk)
	honest, _ := peer.IDFromPrivateKey(other)
	for i := range rfqFreshBurst + 2 {
		want := p2p.Accept
		if i >= rfqFreshBurst {
			want = p2p.Ignore
		}
		raw := sealTestRFQ(t, sk, now.Add(time.Duration(i)*time.Millisecond))
		if got := n.validate(ctx, renter, renter, raw); got != want {
			t.Fatalf("RFQ %d: verdict %v, want %v", i+1, got, want)
		}
	}
	if got := n.validate(ctx, honest, honest, sealTestRFQ(t, other, now)); got != p2p.Accept {
		t.Fatalf("another renter's RFQ: verdict %v, want Accept", got)
	}
}
