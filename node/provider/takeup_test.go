package provider

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
)

// withTakeUp gives the room's bidder the default take-up limits (the room
// sets none, for the tests of other rules).
func (r *room) withTakeUp() *takeUps {
	r.p.bidder.takeUps = newTakeUps(auction.DefaultTakeUpLimits(), r.prov.Clock.Now)
	return r.p.bidder.takeUps
}

// TestFreshRenterAwardsOutstandingBounded: a renter without paid history
// gets at most FreshUnconfirmed awards not taken up at a time: one more is
// declined and its RFQs get no bid until one is taken up.
func TestFreshRenterAwardsOutstandingBounded(t *testing.T) {
	r := newRoom(t, 8)
	tu := r.withTakeUp()
	bound := auction.DefaultTakeUpLimits().FreshUnconfirmed
	type rfqBid struct {
		raw []byte
		rfq *auction.RFQ
		bid *gotBid
	}
	var got []rfqBid
	for range bound + 1 {
		raw, rfq := r.rfq(t, 1, auction.TierSilver)
		bid := r.bidOn(t, raw)
		if bid == nil {
			t.Fatal("a fresh renter with nothing outstanding gets bids")
		}
		got = append(got, rfqBid{raw, rfq, bid})
	}
	var first string
	for i, g := range got[:bound] {
		acc, reason := r.awardResp(t, g.raw, g.rfq, *g.bid, 1)
		if reason != "" {
			t.Fatalf("award %d declined: %s", i, reason)
		}
		if i == 0 {
			first = acc.Award
		}
	}
	last := got[bound]
	if _, reason := r.awardResp(t, last.raw, last.rfq, *last.bid, 1); !strings.Contains(reason, "not taken up yet") {
		t.Fatalf("award %d: decline %q, want at most %d outstanding", bound+1, reason, bound)
	}
	raw, _ := r.rfq(t, 1, auction.TierSilver)
	if bid := r.bidOn(t, raw); bid != nil {
		t.Fatal("a renter at its bound of awards outstanding got another bid")
	}
	tu.tookUp(first)
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	if bid := r.bidOn(t, raw); bid == nil {
		t.Fatal("no bid after the renter took an award up")
	}
}

// TestPaidRenterHasSeveralAwardsOutstanding: paid history lifts the bound.
func TestPaidRenterHasSeveralAwardsOutstanding(t *testing.T) {
	r := newRoom(t, 8)
	r.withTakeUp()
	r.paidBefore(t)
	for i := range auction.DefaultTakeUpLimits().FreshUnconfirmed + 1 {
		raw, rfq := r.rfq(t, 1, auction.TierSilver)
		bid := r.bidOn(t, raw)
		if bid == nil {
			t.Fatalf("award %d: no bid", i)
		}
		if _, reason := r.awardResp(t, raw, rfq, *bid, 1); reason != "" {
			t.Fatalf("award %d of a paid renter declined: %s", i, reason)
		}
	}
}

// TestAbandonsRefuseTheRenter: a renter that abandoned two awards here, or
// awards at three providers (their notes carry its awards to them), gets
// no bid.
func TestAbandonsRefuseTheRenter(t *testing.T) {
	t.Run("here", func(t *testing.T) {
		r := newRoom(t, 4)
		tu := r.withTakeUp()
		now := r.prov.Clock.Now()
		tu.abandon("l1", r.renter.ID.String(), now)
		raw, _ := r.rfq(t, 1, auction.TierSilver)
		if r.bidOn(t, raw) == nil {
			t.Fatal("one abandon here refuses the renter")
		}
		tu.abandon("l2", r.renter.ID.String(), now)
		raw, _ = r.rfq(t, 1, auction.TierSilver)
		if r.bidOn(t, raw) != nil {
			t.Fatal("a renter that abandoned two awards here got a bid")
		}
		r.prov.Clock.Advance(auction.AbandonNoteFor + time.Minute)
		raw, _ = r.rfq(t, 1, auction.TierSilver)
		if r.bidOn(t, raw) == nil {
			t.Fatal("abandons older than an hour still refuse the renter")
		}
	})
	t.Run("noted", func(t *testing.T) {
		r := newRoom(t, 4)
		r.withTakeUp()
		raw, rfq := r.rfq(t, 1, auction.TierSilver)
		bid := r.bidOn(t, raw)
		if bid == nil {
			t.Fatal("no bid")
		}
		for i := range 3 {
			r.p.AbandonNoted(r.noteFromOther(t, raw, rfq, *bid))
			raw2, _ := r.rfq(t, 1, auction.TierSilver)
			if got := r.bidOn(t, raw2) != nil; got != (i < 2) {
				t.Fatalf("after %d notes: bid %v", i+1, got)
			}
		}
	})
}

// noteFromOther is another provider's sealed and opened note of an award
// the room's renter made to it.
func (r *room) noteFromOther(t *testing.T, rfqRaw []byte, rfq *auction.RFQ, bid gotBid) *auction.AbandonNote {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b := *bid.Bid
	b.Provider = other.String()
	awardRaw := r.award(t, rfqRaw, rfq, gotBid{raw: bid.raw, Bid: &b}, 1)
	n, err := auction.NoteAbandoned(awardRaw, r.prov.Clock.Now().Add(auction.TakeUpPatience))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := auction.SealAbandonNote(n, key)
	if err != nil {
		t.Fatal(err)
	}
	opened, _, err := auction.OpenAbandonNote(sealed)
	if err != nil {
		t.Fatal(err)
	}
	return opened
}

// TestAbandonNotesBoundedPerSource: one noting provider counts against at
// most maxNotesPerSource renters an hour.
func TestAbandonNotesBoundedPerSource(t *testing.T) {
	a := newAbandonNotes()
	now := time.UnixMilli(1_700_000_000_000)
	for i := range maxNotesPerSource + 5 {
		counted := a.add("liar", fmt.Sprintf("renter%d", i), now, now)
		if counted != (i < maxNotesPerSource) {
			t.Fatalf("note %d counted %v", i, counted)
		}
	}
	if a.add("honest", "renter0", now, now); a.noted("renter0", now) != 2 {
		t.Fatalf("renter0 noted by %d providers, want 2", a.noted("renter0", now))
	}
	later := now.Add(auction.AbandonNoteFor + time.Second)
	if a.noted("renter0", later) != 0 || !a.add("liar", "renter99", later, later) {
		t.Fatal("notes do not age out after AbandonNoteFor")
	}
	if a.add("x", "y", now, later) {
		t.Fatal("a note older than AbandonNoteFor counted")
	}
}

// TestAfterAnAbandonFreshRentersGetHalf: once a renter abandoned an award
// here, a renter without paid history is bid and awarded at most half the
// provider's GPUs, its own outstanding awards included.
func TestAfterAnAbandonFreshRentersGetHalf(t *testing.T) {
	r := newRoom(t, 4)
	tu := r.withTakeUp()
	raw, _ := r.rfq(t, 4, auction.TierSilver)
	if bid := r.bidOn(t, raw); bid == nil || len(bid.GPUs) != 4 {
		t.Fatalf("before any abandon: bid %v, want all 4 GPUs", bid)
	}
	tu.abandon("l1", "someone-else", r.prov.Clock.Now())
	raw, rfq := r.rfq(t, 4, auction.TierSilver)
	bid := r.bidOn(t, raw)
	if bid == nil || len(bid.GPUs) != 2 {
		t.Fatalf("after an abandon: bid %v, want 2 GPUs of 4", bid)
	}
	if _, reason := r.awardResp(t, raw, rfq, *bid, 2); reason != "" {
		t.Fatalf("award within the share declined: %s", reason)
	}
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	if bid := r.bidOn(t, raw); bid != nil {
		t.Fatal("a fresh renter holding half the provider untaken got another bid")
	}
	r.prov.Clock.Advance(auction.AbandonAlertFor + time.Minute)
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	if bid := r.bidOn(t, raw); bid == nil {
		t.Fatal("the alert outlived AbandonAlertFor")
	}
}
