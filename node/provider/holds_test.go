package provider

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// TestConcurrentRFQsNeverHoldAGPUTwice: 20 RFQs for one GPU each arrive at
// once on a 4-GPU provider. Every GPU is offered in exactly one bid while
// the bids are valid; once the bids expire (the clock moves past their
// validity) the GPUs are offered again.
func TestConcurrentRFQsNeverHoldAGPUTwice(t *testing.T) {
	r := newRoom(t, 4)
	var wg sync.WaitGroup
	for range 20 {
		raw, _ := r.rfq(t, 1, auction.TierSilver)
		wg.Go(func() { r.send(raw) })
	}
	wg.Wait()
	bids := r.takeBids(t)
	if len(bids) != 4 {
		t.Fatalf("%d bids for 20 RFQs on 4 GPUs, want 4 (one per free GPU)", len(bids))
	}
	seen := map[string]bool{}
	for _, b := range bids {
		for _, g := range b.GPUs {
			if seen[g] {
				t.Fatalf("GPU %s offered in two live bids", g)
			}
			seen[g] = true
		}
	}
	raw, _ := r.rfq(t, 1, auction.TierSilver)
	r.send(raw)
	if n := len(r.takeBids(t)); n != 0 {
		t.Fatalf("%d bids while every GPU is held by a live bid", n)
	}
	var until int64
	for _, b := range bids {
		until = max(until, b.ValidUntilMs)
	}
	r.prov.Clock.Advance(time.Duration(until-r.prov.Clock.Now().UnixMilli()+1) * time.Millisecond)
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	r.send(raw)
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids after the holds expired, want 1", n)
	}
}

// TestAwardCommitsAndPreemptsBronze: a bronze lease is countersigned and
// its GPU committed; a gold bid may then take the GPU, starting after the
// promised notice; a second award for the same GPU is declined.
func TestAwardCommitsAndPreemptsBronze(t *testing.T) {
	r := newRoom(t, 1)
	ctx := context.Background()
	bronzeRaw, bronze := r.rfq(t, 1, auction.TierBronze)
	r.send(bronzeRaw)
	bids := r.takeBids(t)
	if len(bids) != 1 {
		t.Fatalf("%d bronze bids, want 1", len(bids))
	}
	resp, err := r.p.HandleAward(ctx, r.renter.ID, r.award(t, bronzeRaw, bronze, bids[0], 1))
	if err != nil || resp[0] != lease.TagAccept {
		t.Fatalf("bronze award: %q, %v", resp, err)
	}
	// Retrying the same award returns the same acceptance.
	again, err := r.p.HandleAward(ctx, r.renter.ID, r.award(t, bronzeRaw, bronze, bids[0], 1))
	if err != nil {
		t.Fatal(err)
	}
	if again[0] != lease.TagDecline && string(again) != string(resp) {
		t.Fatalf("a retried award got a different acceptance")
	}

	goldRaw, gold := r.rfq(t, 1, auction.TierGold)
	r.send(goldRaw)
	gbids := r.takeBids(t)
	if len(gbids) != 1 || gbids[0].GPUs[0] != bids[0].GPUs[0] {
		t.Fatalf("gold bids %v: want one bid on the bronze lease's GPU", gbids)
	}
	now := r.prov.Clock.Now()
	resp, err = r.p.HandleAward(ctx, r.renter.ID, r.award(t, goldRaw, gold, gbids[0], 1))
	if err != nil || resp[0] != lease.TagAccept {
		t.Fatalf("gold award: %q, %v", resp, err)
	}
	acc, _, err := auction.OpenLeaseAcceptance(resp[1:])
	if err != nil {
		t.Fatal(err)
	}
	notice := time.Duration(bids[0].NoticeSec) * time.Second
	if got := time.Duration(acc.StartsAtMs-now.UnixMilli()) * time.Millisecond; got < notice {
		t.Fatalf("gold lease starts %s after the award, before the %s notice owed to bronze", got, notice)
	}

	// No third party gets the GPU while gold holds it.
	silverRaw, _ := r.rfq(t, 1, auction.TierSilver)
	r.send(silverRaw)
	if n := len(r.takeBids(t)); n != 0 {
		t.Fatalf("%d silver bids on a GPU a gold lease holds", n)
	}
	leases, err := r.prov.Store.Leases()
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 2 {
		t.Fatalf("%d leases stored, want the bronze and the gold one", len(leases))
	}
}

// TestAwardForAGPUHeldByAnotherBidIsDeclined: two renters' RFQs; the
// provider bids its one GPU to the first; an award that names that GPU
// for a bid that never held it is declined with the reason.
func TestAwardForAGPUHeldByAnotherBidIsDeclined(t *testing.T) {
	r := newRoom(t, 2)
	ctx := context.Background()
	aRaw, a := r.rfq(t, 1, auction.TierSilver)
	bRaw, b := r.rfq(t, 1, auction.TierSilver)
	r.send(aRaw)
	r.send(bRaw)
	bids := r.takeBids(t)
	if len(bids) != 2 || bids[0].GPUs[0] == bids[1].GPUs[0] {
		t.Fatalf("want two bids on different GPUs, got %d", len(bids))
	}
	byRFQ := map[string]gotBid{}
	for _, x := range bids {
		byRFQ[x.RFQ] = x
	}
	bidA := byRFQ[recordID(aRaw)]
	bidB := byRFQ[recordID(bRaw)]
	// Swap the GPUs: the award names the other bid's GPU.
	bidB.Bid = cloneBid(bidB.Bid)
	bidB.GPUs = bidA.GPUs
	resp, err := r.p.HandleAward(ctx, r.renter.ID, r.award(t, bRaw, b, bidB, 1))
	if err != nil {
		t.Fatal(err)
	}
	if resp[0] != lease.TagDecline {
		t.Fatalf("award naming a GPU outside its bid accepted")
	}
	d, _, err := auction.OpenDecline(resp[1:])
	if err != nil || !strings.Contains(d.Reason, "not in the bid") {
		t.Fatalf("decline %+v, %v: want the reason named", d, err)
	}
	if resp, _ := r.p.HandleAward(ctx, r.renter.ID, r.award(t, aRaw, a, bidA, 1)); resp[0] != lease.TagAccept {
		t.Fatal("the honest award was not accepted")
	}
}
