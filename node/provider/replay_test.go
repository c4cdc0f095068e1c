package provider

import (
	"bytes"
	"context"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// TestReplayedAwardGetsTheSameAcceptance: an award the provider already
// accepted, sent again (a renter retrying after a lost reply, or anyone
// replaying it), gets the original acceptance back byte for byte and
// makes no second lease. (It was a cluster test; nothing in it needs a
// network.)
func TestReplayedAwardGetsTheSameAcceptance(t *testing.T) {
	r := newRoom(t, 2)
	raw, rfq := r.rfq(t, 1, auction.TierSilver)
	bid := r.bidOn(t, raw)
	if bid == nil {
		t.Fatal("no bid")
	}
	award := r.award(t, raw, rfq, *bid, 1)
	var first []byte
	for i := range 3 {
		resp, err := r.p.HandleAward(context.Background(), r.renter.ID, award)
		if err != nil {
			t.Fatal(err)
		}
		if resp[0] != lease.TagAccept {
			t.Fatalf("award %d: response tag %q, want an acceptance", i+1, resp[0])
		}
		if first == nil {
			first = resp
		} else if !bytes.Equal(resp, first) {
			t.Fatalf("award %d: a replayed award must get the original acceptance back", i+1)
		}
	}
	leases, err := r.prov.Store.Leases()
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 {
		t.Fatalf("%d leases after three copies of one award, want 1", len(leases))
	}
}
