package trust

import (
	"bytes"
	"context"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestOnAttestTakesWhatItsValidatorOpened: trust handles the award summary
// its attestation validator opened and handed on (p2p.Message.Record)
// without checking the signature again; a message that comes without it
// is opened, and checked, here.
func TestOnAttestTakesWhatItsValidatorOpened(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	var got []*auction.AwardSummary
	tr.onSummary = func(s *auction.AwardSummary) { got = append(got, s) }
	renterKey, renter := newKey(t)
	providerKey, _ := newKey(t)
	raw, err := auctiontest.Summary(renterKey, providerKey, auctiontest.Lease{
		Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1, PriceMicro: 1_000_000, At: peers[0].Clock.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, rec := tr.ValidateShardAttest(a10Attest)(context.Background(), renter, renter, raw)
	if v != p2p.Accept || rec == nil {
		t.Fatalf("summary: %v, record %v", v, rec)
	}
	spoiled := bytes.Clone(raw)
	spoiled[len(spoiled)-1] ^= 1 // the envelope's signature ends it
	if _, _, err := auction.OpenAwardSummary(spoiled); err == nil {
		t.Fatal("the spoiled summary still opens")
	}

	tr.OnAttest(context.Background(), spoiled, rec)
	if len(got) != 1 || got[0] != rec.(*openedAttest).rec {
		t.Fatalf("summaries handled %v: want the one its validator handed on", got)
	}
	tr.OnAttest(context.Background(), spoiled, nil)
	if len(got) != 1 {
		t.Fatalf("%d summaries handled after a spoiled one with no record, want 1", len(got))
	}
	tr.OnAttest(context.Background(), raw, nil)
	if len(got) != 2 {
		t.Fatalf("%d summaries handled after a sound one with no record, want 2", len(got))
	}
}
