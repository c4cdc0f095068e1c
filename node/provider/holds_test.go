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

// TestConcurrentAwardsNeverCommitAGPUTwice: 20 RFQs for one GPU each
// arrive at once on a 4-GPU provider. Plain bids hold nothing, so every
// RFQ gets a bid; the 20 awards, sent at once, commit each GPU exactly
// once (substituting free GPUs for the ones the bids named) and the rest
// are declined.
func TestConcurrentAwardsNeverCommitAGPUTwice(t *testing.T) {
	r := newRoom(t, 4)
	rfqs := map[string]sentRFQ{}
	var wg sync.WaitGroup
	for range 20 {
		raw, rfq := r.rfq(t, 1, auction.TierSilver)
		rfqs[recordID(raw)] = sentRFQ{raw, rfq}
		wg.Go(func() { r.send(raw) })
	}
	wg.Wait()
	bids := r.takeBids(t)
	if len(bids) != 20 {
		t.Fatalf("%d bids for 20 RFQs on 4 free GPUs, want 20 (a plain bid holds nothing)", len(bids))
	}
	resps := make([][]byte, len(bids))
	for i, b := range bids {
		q := rfqs[b.RFQ]
		award := r.award(t, q.raw, q.rfq, b, 1)
		wg.Go(func() {
			resp, err := r.p.HandleAward(context.Background(), r.renter.ID, award)
			if err != nil {
				t.Errorf("award %d: %v", i, err)
			}
			resps[i] = resp
		})
	}
	wg.Wait()
	committed := map[string]bool{}
	for _, resp := range resps {
		if len(resp) == 0 || resp[0] != lease.TagAccept {
			continue
		}
		acc, _, err := auction.OpenLeaseAcceptance(resp[1:])
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range acc.GPUs {
			if committed[g] {
				t.Fatalf("GPU %s committed to two leases", g)
			}
			committed[g] = true
		}
	}
	if len(committed) != 4 {
		t.Fatalf("%d GPUs committed by 20 awards on 4 GPUs, want all 4", len(committed))
	}
	raw, _ := r.rfq(t, 1, auction.TierSilver)
	r.send(raw)
	if n := len(r.takeBids(t)); n != 0 {
		t.Fatalf("%d bids while every GPU is leased", n)
	}
}

// sentRFQ is an RFQ as the renter sealed it.
type sentRFQ struct {
	raw []byte
	rfq *auction.RFQ
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

// TestAwardForAGPUOutsideItsBidIsDeclined: two RFQs on a 2-GPU provider
// both get a bid on the first GPU; an award that names the other GPU,
// which its bid never offered, is declined with the reason, and the
// honest award is accepted.
func TestAwardForAGPUOutsideItsBidIsDeclined(t *testing.T) {
	r := newRoom(t, 2)
	ctx := context.Background()
	aRaw, a := r.rfq(t, 1, auction.TierSilver)
	bRaw, b := r.rfq(t, 1, auction.TierSilver)
	r.send(aRaw)
	r.send(bRaw)
	bids := r.takeBids(t)
	if len(bids) != 2 {
		t.Fatalf("want two bids, got %d", len(bids))
	}
	byRFQ := map[string]gotBid{}
	for _, x := range bids {
		byRFQ[x.RFQ] = x
	}
	bidA := byRFQ[recordID(aRaw)]
	bidB := byRFQ[recordID(bRaw)]
	other := otherGPU(t, r, bidB.GPUs[0])
	bidB.Bid = cloneBid(bidB.Bid)
	bidB.GPUs = []string{other}
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

// otherGPU is a GPU of the room's provider other than g.
func otherGPU(t *testing.T, r *room, g string) string {
	t.Helper()
	devs, err := r.p.GPUs().Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.UUID != g {
			return d.UUID
		}
	}
	t.Fatalf("no GPU other than %s", g)
	return ""
}
