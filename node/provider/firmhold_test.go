package provider

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// firmOffer is the test offer with firm holds of 2 s on at most gpus GPUs
// per renter.
func firmOffer(gpus int) OfferConfig {
	o := testOffer()
	o.FirmHold = 2 * time.Second
	o.FirmHoldGPUs = gpus
	return o
}

// rfqWindow seals an RFQ of the renter peer with a bid window.
func (r *room) rfqWindow(t *testing.T, gpus int, window string) ([]byte, *auction.RFQ) {
	t.Helper()
	spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: %d\nmax_price: 10\nduration: 10m\ntier: silver\nbid_window: %s\n", testModule, gpus, window))
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	rfq, err := spec.RFQ(r.renter.ID, nonce, r.prov.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := auction.SealRFQ(rfq, r.renter.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw, rfq
}

// bidOn sends an RFQ and returns the one bid it drew (nil: none).
func (r *room) bidOn(t *testing.T, raw []byte) *gotBid {
	t.Helper()
	r.send(raw)
	bids := r.takeBids(t)
	switch len(bids) {
	case 0:
		return nil
	case 1:
		return &bids[0]
	}
	t.Fatalf("%d bids for one RFQ", len(bids))
	return nil
}

// awardResp sends an award and returns the acceptance, or the decline's
// reason.
func (r *room) awardResp(t *testing.T, rfqRaw []byte, rfq *auction.RFQ, bid gotBid, n int) (*auction.LeaseAcceptance, string) {
	t.Helper()
	resp, err := r.p.HandleAward(context.Background(), r.renter.ID, r.award(t, rfqRaw, rfq, bid, n))
	if err != nil {
		t.Fatal(err)
	}
	switch resp[0] {
	case lease.TagAccept:
		acc, _, err := auction.OpenLeaseAcceptance(resp[1:])
		if err != nil {
			t.Fatal(err)
		}
		return acc, ""
	case lease.TagDecline:
		d, _, err := auction.OpenDecline(resp[1:])
		if err != nil {
			t.Fatal(err)
		}
		return nil, d.Reason
	}
	t.Fatalf("response tag %q", resp[0])
	return nil, ""
}

// paidBefore stores a receipted, paid, ended lease of the room's renter on
// the provider, as a past job leaves it, and has the bidder reload its
// evidence as at a start.
func (r *room) paidBefore(t *testing.T) {
	t.Helper()
	l := &store.Lease{
		ID: "paid-before", Side: lease.SideProvider, Renter: r.renter.ID.String(), Provider: r.p.ID().String(),
		State: lease.Completed, Tier: string(auction.TierSilver), PaidMicro: 1000, Receipt: []byte("receipt"),
	}
	if err := r.prov.Leases.Put(l); err != nil {
		t.Fatal(err)
	}
	if err := r.p.bidder.restore(); err != nil {
		t.Fatal(err)
	}
}

// heldGPUs are the GPUs the provider's capacity record shows held.
func (r *room) heldGPUs(t *testing.T) []string {
	t.Helper()
	c, err := r.p.adv.build(1)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range c.GPUs {
		if g.Held {
			out = append(out, g.UUID)
		}
	}
	return out
}

// TestPlainBidsHoldNothing: on a 1-GPU provider two RFQs both get a bid on
// the one GPU; the first award commits it, the second is declined because
// the GPU is leased and there is no other to substitute.
func TestPlainBidsHoldNothing(t *testing.T) {
	r := newRoomWith(t, 1, firmOffer(8))
	aRaw, a := r.rfq(t, 1, auction.TierSilver)
	bRaw, b := r.rfq(t, 1, auction.TierSilver)
	bidA, bidB := r.bidOn(t, aRaw), r.bidOn(t, bRaw)
	if bidA == nil || bidB == nil || bidA.GPUs[0] != bidB.GPUs[0] {
		t.Fatalf("bids %v and %v: want both RFQs bid on the one GPU", bidA, bidB)
	}
	if held := r.heldGPUs(t); len(held) != 0 {
		t.Fatalf("a renter without evidence holds %v", held)
	}
	if _, reason := r.awardResp(t, aRaw, a, *bidA, 1); reason != "" {
		t.Fatalf("first award declined: %s", reason)
	}
	_, reason := r.awardResp(t, bRaw, b, *bidB, 1)
	if !strings.Contains(reason, "already leased") {
		t.Fatalf("second award for the leased GPU: decline %q, want \"already leased\"", reason)
	}
}

// TestSubstitutionAtAwardNamesCommittedGPUs: on a 3-GPU provider three
// RFQs (2, 2 and 1 GPUs) all get bids starting on the same free GPU. The
// first award takes two GPUs; the second, for two, finds one left and is
// declined; the third, for one, is placed on the GPU left, and both its
// acceptance and the stored lease name that GPU.
func TestSubstitutionAtAwardNamesCommittedGPUs(t *testing.T) {
	r := newRoom(t, 3)
	aRaw, a := r.rfq(t, 2, auction.TierSilver)
	bRaw, b := r.rfq(t, 2, auction.TierSilver)
	cRaw, c := r.rfq(t, 1, auction.TierSilver)
	bidA, bidB, bidC := r.bidOn(t, aRaw), r.bidOn(t, bRaw), r.bidOn(t, cRaw)
	if bidA == nil || bidB == nil || bidC == nil || !slices.Equal(bidA.GPUs, bidB.GPUs) || bidC.GPUs[0] != bidA.GPUs[0] {
		t.Fatalf("bids %v, %v, %v: want all on the same free GPUs", bidA, bidB, bidC)
	}
	accA, reason := r.awardResp(t, aRaw, a, *bidA, 2)
	if reason != "" || !slices.Equal(accA.GPUs, bidA.GPUs) {
		t.Fatalf("first award: %v, %q; want the bid's GPUs", accA, reason)
	}
	if _, reason := r.awardResp(t, bRaw, b, *bidB, 2); !strings.Contains(reason, "already leased") {
		t.Fatalf("award of 2 GPUs with 1 left: decline %q, want \"already leased\"", reason)
	}
	accC, reason := r.awardResp(t, cRaw, c, *bidC, 1)
	if reason != "" {
		t.Fatalf("award of 1 GPU with 1 left declined: %s", reason)
	}
	third := accC.GPUs[0]
	if len(accC.GPUs) != 1 || slices.Contains(accA.GPUs, third) {
		t.Fatalf("acceptance names %v; want the one GPU the first lease does not use", accC.GPUs)
	}
	l, err := r.prov.Store.GetLease(accC.Award)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.GPUs, accC.GPUs) {
		t.Fatalf("stored lease names %v, the acceptance %v", l.GPUs, accC.GPUs)
	}
	if bid := r.bidOn(t, first(r.rfq(t, 1, auction.TierSilver))); bid != nil {
		t.Fatalf("bid %v while every GPU is leased", bid.GPUs)
	}
}

func first(raw []byte, _ *auction.RFQ) []byte { return raw }

// TestFirmHoldOnlyWithPaidReceipt: a renter's bids hold nothing until the
// provider holds a paid receipt from it; then a bid holds its GPU (shown
// held in the capacity record, not offered to the next RFQ) for
// provider.firm_hold, although the renter's bid window is far longer.
func TestFirmHoldOnlyWithPaidReceipt(t *testing.T) {
	r := newRoomWith(t, 1, firmOffer(8))
	raw, _ := r.rfqWindow(t, 1, "30s")
	if r.bidOn(t, raw) == nil {
		t.Fatal("no bid")
	}
	if bid := r.bidOn(t, first(r.rfqWindow(t, 1, "30s"))); bid == nil {
		t.Fatal("without evidence a bid held the GPU: the next RFQ got no bid")
	}

	r.paidBefore(t)
	held := r.bidOn(t, first(r.rfqWindow(t, 1, "30s")))
	if held == nil {
		t.Fatal("no bid")
	}
	if got := r.heldGPUs(t); !slices.Equal(got, held.GPUs) {
		t.Fatalf("capacity shows %v held, want the bid's %v", got, held.GPUs)
	}
	if bid := r.bidOn(t, first(r.rfqWindow(t, 1, "30s"))); bid != nil {
		t.Fatalf("GPU under firm hold offered again: %v", bid.GPUs)
	}
	r.prov.Clock.Advance(2 * time.Second)
	if got := r.heldGPUs(t); len(got) != 0 {
		t.Fatalf("capacity shows %v held after firm_hold, with the bid still valid", got)
	}
	if held.ValidUntilMs <= r.prov.Clock.Now().UnixMilli() {
		t.Fatal("the bid expired before the firm hold: the test shows nothing")
	}
	if bid := r.bidOn(t, first(r.rfqWindow(t, 1, "30s"))); bid == nil {
		t.Fatal("no bid after the firm hold ended")
	}
}

// TestFirmHoldBoundedPerRenter: with firm_hold_gpus = 2 a renter with
// evidence asking for 4 GPUs has 2 held; its next RFQ is offered the 2
// others, which are not held: the renter's allowance is used up.
func TestFirmHoldBoundedPerRenter(t *testing.T) {
	r := newRoomWith(t, 4, firmOffer(2))
	r.paidBefore(t)
	bid := r.bidOn(t, first(r.rfq(t, 4, auction.TierSilver)))
	if bid == nil || len(bid.GPUs) != 4 {
		t.Fatalf("bid %v: want all 4 GPUs offered", bid)
	}
	held := r.heldGPUs(t)
	if len(held) != 2 {
		t.Fatalf("%d GPUs held for one renter, want firm_hold_gpus = 2", len(held))
	}
	next := r.bidOn(t, first(r.rfq(t, 4, auction.TierSilver)))
	if next == nil || len(next.GPUs) != 2 || slices.ContainsFunc(next.GPUs, func(g string) bool { return slices.Contains(held, g) }) {
		t.Fatalf("next bid %v: want the 2 GPUs not held", next)
	}
	if got := r.heldGPUs(t); !slices.Equal(got, held) {
		t.Fatalf("held %v after the next bid, want still only %v", got, held)
	}
}

// TestAwardSubstitutesAroundAFirmHold: a plain bid names the first GPU;
// by its award that GPU is under another bid's firm hold, so the award is
// placed on the free second GPU, and the firm bid's award gets the GPU it
// held. On a 1-GPU provider the plain award has nothing to substitute and
// is declined with the reason.
func TestAwardSubstitutesAroundAFirmHold(t *testing.T) {
	for _, gpus := range []int{2, 1} {
		t.Run(fmt.Sprintf("%d_gpus", gpus), func(t *testing.T) {
			r := newRoomWith(t, gpus, firmOffer(1))
			plainRaw, plain := r.rfq(t, 1, auction.TierSilver)
			plainBid := r.bidOn(t, plainRaw)
			r.paidBefore(t)
			firmRaw, firm := r.rfq(t, 1, auction.TierSilver)
			firmBid := r.bidOn(t, firmRaw)
			if plainBid == nil || firmBid == nil || plainBid.GPUs[0] != firmBid.GPUs[0] {
				t.Fatalf("bids %v, %v: want both on the first GPU", plainBid, firmBid)
			}
			acc, reason := r.awardResp(t, plainRaw, plain, *plainBid, 1)
			switch {
			case gpus == 1 && !strings.Contains(reason, "held by another bid"):
				t.Fatalf("plain award for the only, firmly held GPU: %v, %q; want declined as held", acc, reason)
			case gpus == 2 && (reason != "" || acc.GPUs[0] == firmBid.GPUs[0]):
				t.Fatalf("plain award: %v, %q; want it placed beside the firm hold", acc, reason)
			}
			if acc, reason := r.awardResp(t, firmRaw, firm, *firmBid, 1); reason != "" || acc.GPUs[0] != firmBid.GPUs[0] {
				t.Fatalf("firm award: %v, %q; want the held GPU", acc, reason)
			}
		})
	}
}

// TestPaidReceiptEarnsFirmHolds: the receipt over a paid lease is the
// evidence; once the provider issued it, the renter's next bid holds its
// GPU, without a restart.
func TestPaidReceiptEarnsFirmHolds(t *testing.T) {
	r := newRoomWith(t, 1, firmOffer(8))
	start := r.prov.Clock.Now()
	l := r.runningLease(t, start)
	if _, err := r.p.cashier.acceptVoucher(r.renter.ID, l, r.voucher(t, l, 1, start.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if r.bidOn(t, first(r.rfq(t, 1, auction.TierSilver))) == nil || len(r.heldGPUs(t)) != 0 {
		t.Fatal("a renter with a voucher but no receipt yet got a firm hold (or no bid)")
	}
	if _, _, err := r.prov.Leases.Finish(l.ID, lease.Completed, "", func(l *store.Lease) { l.WorkFinishedMs = start.Add(time.Minute).UnixMilli() }); err != nil {
		t.Fatal(err)
	}
	cur, err := r.prov.Store.GetLease(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.p.cashier.issueReceipt(context.Background(), cur)
	bid := r.bidOn(t, first(r.rfq(t, 1, auction.TierSilver)))
	if bid == nil || !slices.Equal(r.heldGPUs(t), bid.GPUs) {
		t.Fatalf("after a paid receipt the bid %v holds %v, want its GPU", bid, r.heldGPUs(t))
	}
}
