package auction

import (
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/libp2p/go-libp2p/core/peer"
)

// fuzzOpen seeds a fuzz target with a valid sealed message of the kind, a
// forged one (signed by a peer it does not name), a structurally invalid
// one and truncations, then checks that open never panics and accepts
// only valid messages signed by their named author.
// Run one with: go test ./auction -run '^$' -fuzz '^FuzzOpenRFQ$' -fuzztime 20s
func fuzzOpen[T any](f *testing.F, kind string, open func([]byte) (*T, peer.ID, error), owner func(*T) string) {
	var k msgKind
	for _, x := range msgKinds {
		if x.golden == kind {
			k = x
		}
	}
	key, _ := testKey(f, k.ownerSeed)
	valid, err := k.seal(k.fixture(f), key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	other, _ := testKey(f, 9)
	if forged, err := attest.Seal(k.fixture(f), other); err == nil {
		f.Add(forged)
	}
	bad := k.fixture(f)
	setInvalid(bad)
	if invalid, err := attest.Seal(bad, key); err == nil {
		f.Add(invalid)
	}
	f.Add([]byte{})
	if r, ok := any(k.fixture(f)).(*RFQ); ok {
		r.Model = &ModelRef{ID: testModelID, SizeMiB: 15_258}
		if withModel, err := k.seal(r, key); err == nil {
			f.Add(withModel)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, signer, err := open(raw)
		if err != nil {
			if m != nil {
				t.Fatal("returned a message with an error")
			}
			return
		}
		if owner(m) != signer.String() {
			t.Fatal("accepted a message whose author is not its signer")
		}
		if err := any(m).(auctionMessage).Validate(); err != nil {
			t.Fatalf("accepted an invalid message: %v", err)
		}
		if len(raw) > k.limit {
			t.Fatalf("accepted %d bytes over the %d limit", len(raw), k.limit)
		}
	})
}

func FuzzOpenRFQ(f *testing.F) {
	fuzzOpen(f, "rfq", OpenRFQ, func(r *RFQ) string { return r.Renter })
}

func FuzzOpenBid(f *testing.F) {
	fuzzOpen(f, "bid", OpenBid, func(b *Bid) string { return b.Provider })
}

func FuzzOpenAward(f *testing.F) {
	fuzzOpen(f, "award", OpenAward, func(a *Award) string { return a.Renter })
}

func FuzzOpenLeaseAcceptance(f *testing.F) {
	fuzzOpen(f, "lease-acceptance", OpenLeaseAcceptance, func(l *LeaseAcceptance) string { return l.Provider })
}

func FuzzOpenDecline(f *testing.F) {
	fuzzOpen(f, "decline", OpenDecline, func(d *Decline) string { return d.Provider })
}

func FuzzOpenPreemptNotice(f *testing.F) {
	fuzzOpen(f, "preempt-notice", OpenPreemptNotice, func(n *PreemptNotice) string { return n.Provider })
}

func FuzzOpenAwardSummary(f *testing.F) {
	fuzzOpen(f, "award-summary", OpenAwardSummary, func(s *AwardSummary) string { return s.Renter })
}

func FuzzOpenAbandonNote(f *testing.F) {
	fuzzOpen(f, "abandon-note", OpenAbandonNote, func(n *AbandonNote) string { return n.Provider })
}
