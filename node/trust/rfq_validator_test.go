package trust

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

func sealTestRFQ(t *testing.T, sk crypto.PrivKey, now time.Time) []byte {
	t.Helper()
	id, _ := peer.IDFromPrivateKey(sk)
	spec, err := auction.ParseJobSpec([]byte("module: " + auction.CapabilityCID("m").String() + "\ngpus: 1\nmax_price: 1\nduration: 1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	rfq, err := spec.RFQ(id, []byte("0123456789abcdef"), now)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := auction.SealRFQ(rfq, sk)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRFQValidator: valid RFQs pass once; a replay is ignored; a message
// whose gossip signer is not the RFQ's renter, garbage and long-expired
// RFQs never reach the bidder. Each drop is counted under its reason.
func TestRFQValidator(t *testing.T) {
	var dropped []string
	n := NewRFQGate(RFQGateDeps{Dropped: func(reason string) { dropped = append(dropped, reason) }})
	n.seen = auction.NewSeenCache(16)
	sk, _, _ := crypto.GenerateEd25519Key(nil)
	other, _, _ := crypto.GenerateEd25519Key(nil)
	renter, _ := peer.IDFromPrivateKey(sk)
	stranger, _ := peer.IDFromPrivateKey(other)
	ctx := context.Background()
	fresh := sealTestRFQ(t, sk, time.Now())
	old := sealTestRFQ(t, sk, time.Now().Add(-time.Hour))
	expired := sealTestRFQ(t, sk, time.Now().Add(-auction.RFQExpiryMargin-time.Minute))
	tests := []struct {
		name   string
		signer peer.ID
		data   []byte
		want   p2p.Verdict
		reason string // "" for none
	}{
		{"valid", renter, fresh, p2p.Accept, ""},
		{"replay", renter, fresh, p2p.Ignore, rfqDropReplay},
		{"republished by another peer", stranger, sealTestRFQ(t, sk, time.Now()), p2p.Reject, rfqDropMalformed},
		{"garbage", renter, []byte("not an rfq"), p2p.Reject, rfqDropMalformed},
		{"expired in transit", renter, expired, p2p.Withhold, "expired"},
		{"long expired", renter, old, p2p.Reject, "stale"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dropped = nil
			if got := n.validate(ctx, tc.signer, tc.signer, tc.data); got != tc.want {
				t.Fatalf("verdict %v, want %v", got, tc.want)
			}
			if want := []string{tc.reason}; tc.reason == "" && len(dropped) != 0 || tc.reason != "" && !slices.Equal(dropped, want) {
				t.Fatalf("drops counted %v, want %q", dropped, tc.reason)
			}
		})
	}
}
