package trust

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

func newKey(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(sk)
	return sk, id
}

// a10Attest is the A10 shard's attestation topic, which carries its
// leases' award summaries.
var a10Attest = auction.GPUShard("a10").AttestTopic()

// gossipSummary hands a summary to tr as the A10 shard's attestation topic would.
func gossipSummary(t *testing.T, tr *Trust, renter, provider crypto.PrivKey, price uint64, at time.Time) p2p.Verdict {
	t.Helper()
	raw, err := auctiontest.Summary(renter, provider, auctiontest.Lease{Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1, PriceMicro: price, At: at})
	if err != nil {
		t.Fatal(err)
	}
	rid, _ := peer.IDFromPrivateKey(renter)
	v, rec := tr.ValidateShardAttest(a10Attest)(context.Background(), rid, rid, raw)
	if v == p2p.Accept {
		tr.OnAttest(context.Background(), raw, rec)
	}
	return v
}

// TestPriceIndexCountsEvidence: summaries between backed parties set the
// index; fifty pairs of fresh keys co-signing summaries at ten times the
// price, and renters forging summaries nobody accepted, do not move it.
func TestPriceIndexCountsEvidence(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	now := peers[0].Clock.Now()
	renterKey, _ := newKey(t)
	for i := range 4 {
		sk, id := provider(t, recs, now)
		offer(t, tr, id, sealedDigest(t, sk, now, 1))
		drainChecks(t, tr)
		if v := gossipSummary(t, tr, renterKey, sk, uint64(1_000_000+i*10_000), now); v != p2p.Accept {
			t.Fatalf("honest summary: %v", v)
		}
	}
	median := func() uint64 {
		t.Helper()
		stats, err := tr.PriceIndex(time.Time{}, time.Time{})
		if err != nil || len(stats) != 1 {
			t.Fatalf("price index: %+v, %v", stats, err)
		}
		return stats[0].MedianMicro
	}
	base := median()
	for range 50 {
		r, _ := newKey(t)
		p, _ := newKey(t)
		if v := gossipSummary(t, tr, r, p, 10_000_000, now); v != p2p.Accept {
			t.Fatalf("a fresh pair's summary: %v", v)
		}
	}
	if got := median(); got != base {
		t.Fatalf("fifty fresh pairs moved the median from %d to %d", base, got)
	}
	// A renter alone cannot make one: a summary whose acceptance is
	// another award's is rejected at the edge.
	r, _ := newKey(t)
	p, _ := newKey(t)
	good, _ := auctiontest.Summary(r, p, auctiontest.Lease{Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1, PriceMicro: 9_000_000, At: now})
	other, _ := auctiontest.Summary(r, p, auctiontest.Lease{Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1, PriceMicro: 9_000_000, At: now})
	s, _, err := auction.OpenAwardSummary(good)
	if err != nil {
		t.Fatal(err)
	}
	o, _, _ := auction.OpenAwardSummary(other)
	s.AcceptEnv = o.AcceptEnv
	forged, err := auction.SealAwardSummary(s, r)
	if err != nil {
		t.Fatal(err)
	}
	rid, _ := peer.IDFromPrivateKey(r)
	if v, _ := tr.ValidateShardAttest(a10Attest)(context.Background(), rid, rid, forged); v != p2p.Reject {
		t.Fatalf("a summary without its provider's acceptance: %v, want reject", v)
	}
	if got := median(); got != base {
		t.Fatalf("the index moved from %d to %d", base, got)
	}
}

// TestRenownedRentersVouchForBidders: a summary's list of bidders makes
// them proven (bid-selection view) only when its renter holds receipts.
func TestRenownedRentersVouchForBidders(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	now := peers[0].Clock.Now()
	var winnerKey crypto.PrivKey
	var bidders []string
	for i := range 3 {
		sk, id := provider(t, recs, now)
		offer(t, tr, id, sealedDigest(t, sk, now, 1))
		bidders = append(bidders, id.String())
		if i == 0 {
			winnerKey = sk
		}
	}
	drainChecks(t, tr)
	slices.Sort(bidders)
	renterKey, renter := newKey(t)
	raw, err := auctiontest.Summary(renterKey, winnerKey, auctiontest.Lease{
		Model: "a10", Tier: auction.TierBronze, GPUs: 1, PriceMicro: 1_000_000, At: now, Bidders: bidders,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, rec := tr.ValidateShardAttest(a10Attest)(context.Background(), renter, renter, raw)
	if v != p2p.Accept {
		t.Fatalf("summary: %v", v)
	}
	tr.OnAttest(context.Background(), raw, rec)
	if got := len(tr.Digests(auction.GPUShard("a10"))); got != 1 {
		t.Fatalf("a fresh renter's word proved %d providers; want only the winner, whose acceptance it carries", got)
	}
	tr.renown.renters = map[string]bool{renter.String(): true}
	if got := len(tr.Digests(auction.GPUShard("a10"))); got != 3 {
		t.Fatalf("a renowned renter's bidders: %d proven, want 3", got)
	}
}

// TestReceiptMakesItsRenterRenownedAtOnce: a gossiped receipt from a
// provider this node has evidence of makes its renter renowned when it
// arrives, not at the next rebuild (a brand-new market's bids wait on
// it); one from a provider nobody checked makes nobody renowned.
func TestReceiptMakesItsRenterRenownedAtOnce(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	now := peers[0].Clock.Now()
	backedKey, backed := provider(t, recs, now)
	offer(t, tr, backed, sealedDigest(t, backedKey, now, 1))
	drainChecks(t, tr)
	strangerKey, stranger := newKey(t)

	var strangers [][]byte // receipts withheld, stored by hand below
	gossipReceipt := func(providerKey crypto.PrivKey, prov peer.ID) peer.ID {
		t.Helper()
		renterKey, renter := newKey(t)
		raw, err := auctiontest.Summary(renterKey, providerKey, auctiontest.Lease{Model: "a10", Tier: auction.TierBronze, GPUs: 1, PriceMicro: 1_000_000, At: now})
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := auction.OpenAwardSummary(raw)
		if err != nil {
			t.Fatal(err)
		}
		v, err := attest.SealVoucher(&attest.Voucher{V: attest.RecordsVersion, Lease: sum.Award, Renter: renter.String(), Provider: prov.String(),
			Seq: 1, AmountMicro: 10_000, CoveredUntilMs: now.UnixMilli(), IssuedMs: now.UnixMilli()}, renterKey)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := attest.SealReceipt(&attest.Receipt{V: attest.RecordsVersion, Lease: sum.Award, Provider: prov.String(), Renter: renter.String(),
			Outcome: "finished", FirstSeq: 1, LastSeq: 2, AtMs: now.UnixMilli(), Voucher: v}, providerKey)
		if err != nil {
			t.Fatal(err)
		}
		verdict, rec := tr.ValidateShardAttest(a10Attest)(context.Background(), prov, prov, rc)
		switch {
		case prov == stranger && verdict == p2p.Withhold:
			// Not evidence: not kept, not passed on (receipt_book.go).
			strangers = append(strangers, rc)
			return renter
		case verdict != p2p.Accept:
			t.Fatalf("receipt: %v", verdict)
		}
		tr.OnAttest(context.Background(), rc, rec)
		return renter
	}
	if r := gossipReceipt(backedKey, backed); !tr.Renowned(r.String()) {
		t.Error("a receipt from a backed provider: its renter is not renowned until the next rebuild")
	}
	if r := gossipReceipt(strangerKey, stranger); tr.Renowned(r.String()) {
		t.Error("a receipt from a provider nobody checked made its renter renowned")
	}
	if len(strangers) != 1 {
		t.Fatal("a receipt from a provider nobody checked was not withheld")
	}
	// One stored anyway (before a restart, of a provider whose evidence
	// this node has since forgotten) makes nobody renowned either.
	if err := tr.db.PutReceiptTTL(attest.RecordID(strangers[0]).String(), strangers[0], gossipedReceiptRetention); err != nil {
		t.Fatal(err)
	}
	tr.refreshRenown()
	if n := len(tr.renown.renters); n != 1 {
		t.Errorf("the rebuild from the stored receipts found %d renowned renters, want the one", n)
	}
}
