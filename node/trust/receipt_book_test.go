package trust

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// sealReceipt seals provider's receipt of a completed lease to renter,
// dated at, of gpuHours; the lease ID is a CID made of name.
func sealReceipt(t testing.TB, renter, provider *roomtest.Peer, name string, at time.Time, gpuHours float64) []byte {
	t.Helper()
	leaseID := attest.RecordID([]byte(name)).String()
	v, err := attest.SealVoucher(&attest.Voucher{V: attest.RecordsVersion, Lease: leaseID, Renter: renter.ID.String(), Provider: provider.ID.String(),
		Seq: 1, AmountMicro: 10_000, CoveredUntilMs: at.UnixMilli(), IssuedMs: at.UnixMilli()}, renter.Key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := attest.SealReceipt(&attest.Receipt{V: attest.RecordsVersion, Lease: leaseID, Provider: provider.ID.String(), Renter: renter.ID.String(),
		Outcome: lease.Completed, FirstSeq: 1, LastSeq: 2, AtMs: at.UnixMilli(), GPUMs: uint64(gpuHours * 3_600_000), Voucher: v}, provider.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// gossip passes a receipt, forwarded by from with no gossip signature,
// through the shard's attestation validator and, when admitted, to
// OnAttest, as the topic does.
func gossip(t testing.TB, tr *Trust, from *roomtest.Peer, raw []byte) p2p.Verdict {
	t.Helper()
	verdict, rec := tr.ValidateShardAttest(a10Attest)(context.Background(), from.ID, "", raw)
	if verdict == p2p.Accept {
		tr.OnAttest(context.Background(), raw, rec)
	}
	return verdict
}

// storedReceipts is the IDs of the receipts in tr's store.
func storedReceipts(t testing.TB, tr *Trust) []string {
	t.Helper()
	ids, err := tr.db.ReceiptIDs()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

func idsOf(raws ...[]byte) []string {
	var out []string
	for _, r := range raws {
		out = append(out, attest.RecordID(r).String())
	}
	slices.Sort(out)
	return out
}

// pairSetup is a node (peers[0]) and a renter and provider (peers[1],
// peers[2], whose record the node checked), with how many of a pair's
// receipts the node keeps.
func pairSetup(t *testing.T) ([]*roomtest.Peer, *Trust, int) {
	t.Helper()
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	markBacked(tr, peers[2])
	return peers, tr, tr.rep.cfg.GossipKeep()
}

// markBacked makes tr hold a checked record of each provider, as a
// record check does (records.go).
func markBacked(tr *Trust, providers ...*roomtest.Peer) {
	for _, p := range providers {
		tr.ev.update(p.ID.String(), tr.now(), func(ev *peerEvidence) { ev.everBacked = true })
	}
}

// TestReceiptBookKeepsEachPairsHeaviest: of one renter's receipts about
// one provider a node keeps the 16 heaviest (GossipKeep), whatever order
// they come in; a lighter one is withheld, neither stored nor passed on,
// and one that outweighs the lightest kept pushes it out of the store. The
// fold counts the kept ones.
func TestReceiptBookKeepsEachPairsHeaviest(t *testing.T) {
	peers, tr, keep := pairSetup(t)
	renter, prov, now := peers[1], peers[2], peers[0].Clock.Now()
	var raws [][]byte
	for i := range keep + 4 {
		// Older receipts weigh less: lease i is i hours old.
		raws = append(raws, sealReceipt(t, renter, prov, fmt.Sprintf("lease-%02d", i), now.Add(-time.Duration(i)*time.Hour), 2))
	}
	// The four lightest first, then the rest: each of the sixteen
	// heavier pushes one out, until the four are gone.
	order := append(slices.Clone(raws[keep:]), raws[:keep]...)
	for _, raw := range order {
		if v := gossip(t, tr, renter, raw); v != p2p.Accept {
			t.Fatalf("a receipt heavier than the lightest kept: %v", v)
		}
	}
	if got, want := storedReceipts(t, tr), idsOf(raws[:keep]...); !slices.Equal(got, want) {
		t.Fatalf("stored %d receipts, want the %d heaviest:\n got %q\nwant %q", len(got), keep, got, want)
	}
	if n := testutil.ToFloat64(tr.receiptsDropped.WithLabelValues(receiptDropPair)); n != 4 {
		t.Errorf("receipts dropped for their pair: %v, want 4", n)
	}
	// The pair is full: a receipt lighter than all of it is withheld.
	light := sealReceipt(t, renter, prov, "lease-light", now.Add(-48*time.Hour), 2)
	if v := gossip(t, tr, renter, light); v != p2p.Withhold {
		t.Fatalf("a receipt lighter than the pair's heaviest 16: %v, want withheld", v)
	}
	if n := testutil.ToFloat64(tr.receiptsDropped.WithLabelValues(receiptDropPair)); n != 5 {
		t.Errorf("receipts dropped for their pair, the withheld one too: %v, want 5", n)
	}
	// Another renter's pair is its own.
	other := peers[0]
	if v := gossip(t, tr, renter, sealReceipt(t, renter, other, "lease-other", now.Add(-48*time.Hour), 2)); v != p2p.Accept {
		t.Fatalf("a receipt about another provider: %v", v)
	}
	res := tr.rep.fold(false)[prov.ID.String()]
	if res.GossipSuccesses != keep {
		t.Errorf("the fold counted %d of the pair's receipts, want %d", res.GossipSuccesses, keep)
	}
}

// TestReceiptBookBoundsEachProvider: renter keys are free, so one checked
// provider could sign receipts to fresh renters until the book held
// nothing else. Past its bound per provider the book drops that
// provider's lightest receipt, whichever renter's, and withholds one
// lighter than all it holds of that provider; other providers' receipts
// stay.
func TestReceiptBookBoundsEachProvider(t *testing.T) {
	peers := roomtest.Peers(t, 9)
	tr := newTrust(t, peers[0])
	tr.receipts.perProvider = 3
	flooder, honest := peers[1], peers[2]
	markBacked(tr, flooder, honest)
	now := peers[0].Clock.Now()
	kept := sealReceipt(t, peers[3], honest, "honest", now.Add(-10*time.Hour), 1)
	gossip(t, tr, peers[3], kept)
	var raws [][]byte
	for i := range 5 { // five fresh renters, newest last
		renter := peers[4+i]
		raws = append(raws, sealReceipt(t, renter, flooder, fmt.Sprintf("flood-%d", i), now.Add(-time.Duration(5-i)*time.Hour), 1))
		if v := gossip(t, tr, renter, raws[i]); v != p2p.Accept {
			t.Fatalf("receipt %d: %v", i, v)
		}
	}
	if got, want := storedReceipts(t, tr), idsOf(kept, raws[2], raws[3], raws[4]); !slices.Equal(got, want) {
		t.Fatalf("stored\n got %q\nwant %q (the honest provider's and the flooder's 3 heaviest)", got, want)
	}
	if n := testutil.ToFloat64(tr.receiptsDropped.WithLabelValues(receiptDropProvider)); n != 2 {
		t.Errorf("receipts dropped for the provider bound: %v, want 2", n)
	}
	if v := gossip(t, tr, peers[4], sealReceipt(t, peers[4], flooder, "flood-old", now.Add(-24*time.Hour), 1)); v != p2p.Withhold {
		t.Fatalf("a receipt lighter than all the provider's held: %v, want withheld", v)
	}
}

// TestReceiptBookBoundedInAll: past its bound the book drops the lightest
// receipt of all, from the store too, and withholds a receipt lighter
// than everything it holds. Own receipts are neither counted in the bound
// nor dropped.
func TestReceiptBookBoundedInAll(t *testing.T) {
	peers := roomtest.Peers(t, 8)
	tr := newTrust(t, peers[0])
	tr.receipts.max = 4
	markBacked(tr, peers[4:]...)
	now := peers[0].Clock.Now()
	own := sealReceipt(t, peers[1], peers[0], "lease-own", now.Add(-100*time.Hour), 1)
	if err := tr.db.PutReceipt(attest.RecordID(own).String(), own); err != nil {
		t.Fatal(err)
	}
	var raws [][]byte
	for i := range 6 {
		renter, prov := peers[1+i%3], peers[4+i%4]
		raws = append(raws, sealReceipt(t, renter, prov, fmt.Sprintf("lease-%d", i), now.Add(-time.Duration(6-i)*time.Hour), 2))
		if v := gossip(t, tr, renter, raws[i]); v != p2p.Accept {
			t.Fatalf("receipt %d: %v", i, v)
		}
	}
	// The two oldest went when the fifth and sixth came.
	if got, want := storedReceipts(t, tr), idsOf(append([][]byte{own}, raws[2:]...)...); !slices.Equal(got, want) {
		t.Fatalf("stored\n got %q\nwant %q (the own receipt and the 4 heaviest gossiped)", got, want)
	}
	if n := testutil.ToFloat64(tr.receiptsDropped.WithLabelValues(receiptDropFull)); n != 2 {
		t.Errorf("receipts dropped when full: %v, want 2", n)
	}
	if v := gossip(t, tr, peers[1], sealReceipt(t, peers[1], peers[5], "lease-old", now.Add(-24*time.Hour), 2)); v != p2p.Withhold {
		t.Fatalf("a receipt lighter than every one held: %v, want withheld", v)
	}
	// The own receipt is read from the store and counted.
	_ = tr.receiptEvidence()
	if n := tr.receipts.gossiped(); n != 4 {
		t.Errorf("the book holds %d gossiped receipts, want 4", n)
	}
	if got := storedReceipts(t, tr); !slices.Contains(got, attest.RecordID(own).String()) {
		t.Error("the own receipt was dropped")
	}
}

// TestReceiptBookFollowsTheStore: the book takes what it lacks from the
// store (a restarted node: receipts stored before any bound, which it
// then enforces, deleting the rest) and forgets what left it (a gossiped
// receipt's 30 days ran out).
func TestReceiptBookFollowsTheStore(t *testing.T) {
	peers, tr, keep := pairSetup(t)
	renter, prov, now := peers[1], peers[2], peers[0].Clock.Now()
	var raws [][]byte
	for i := range keep + 3 {
		raw := sealReceipt(t, renter, prov, fmt.Sprintf("lease-%02d", i), now.Add(-time.Duration(i)*time.Minute), 1)
		raws = append(raws, raw)
		if err := tr.db.PutReceiptTTL(attest.RecordID(raw).String(), raw, gossipedReceiptRetention); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tr.receiptEvidence()); n != keep {
		t.Fatalf("the book took %d of the stored receipts, want %d", n, keep)
	}
	if got, want := storedReceipts(t, tr), idsOf(raws[:keep]...); !slices.Equal(got, want) {
		t.Fatalf("after the first read the store holds\n %q\nwant the %d heaviest\n %q", got, keep, want)
	}
	if err := tr.db.DeleteReceipts(idsOf(raws[0])); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.receiptEvidence()); n != keep-1 {
		t.Fatalf("a receipt gone from the store: the book holds %d, want %d", n, keep-1)
	}
	// With room again, the next one is kept.
	if v := gossip(t, tr, renter, raws[keep]); v != p2p.Accept {
		t.Fatalf("a receipt that fits again: %v", v)
	}
}

// TestReceiptBookOneReceiptPerLease: a provider re-issues a lease's
// receipt when a later voucher reaches it; the book keeps the one the
// fold counts (the earlier), and the other is not stored.
func TestReceiptBookOneReceiptPerLease(t *testing.T) {
	peers, tr, _ := pairSetup(t)
	renter, prov, now := peers[1], peers[2], peers[0].Clock.Now()
	first := sealReceipt(t, renter, prov, "lease-1", now.Add(-time.Hour), 1)
	second := sealReceipt(t, renter, prov, "lease-1", now, 2)
	gossip(t, tr, renter, second)
	gossip(t, tr, renter, first)
	if v := gossip(t, tr, renter, second); v != p2p.Withhold {
		t.Fatalf("the lease's later receipt again: %v, want withheld", v)
	}
	if got, want := storedReceipts(t, tr), idsOf(first); !slices.Equal(got, want) {
		t.Fatalf("stored %q, want only the lease's first receipt %q", got, want)
	}
}

// TestReceiptBookMatchesPlainRules checks the book's indexes (a heap, a
// sorted slice per pair and per provider) against the same rules done
// plainly, over random receipts: each pair keeps its GossipKeep heaviest,
// one receipt per lease, each provider its perProvider heaviest, and the
// book its max heaviest in all. What the validator asks
// first (refusal) is what admit then does.
func TestReceiptBookMatchesPlainRules(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := ReputationConfig(0.8)
		cfg.GossipDiminish = rapid.SampledFrom([]float64{0.5, 0.1, 0}).Draw(rt, "diminish")
		b := newReceiptBook(cfg, "self", func(string) {})
		b.max = rapid.IntRange(1, 40).Draw(rt, "max")
		b.perProvider = rapid.IntRange(1, 30).Draw(rt, "perProvider")
		t0 := time.UnixMilli(1_700_000_000_000)
		held := map[string]reputation.Receipt{} // the plain model
		lightest := func(in func(reputation.Receipt) bool) string {
			var id string
			for k, rc := range held {
				if in(rc) && (id == "" || heavierFirst(cfg, rc, held[id]) > 0) {
					id = k
				}
			}
			return id
		}
		n := rapid.IntRange(1, 200).Draw(rt, "n")
		for i := range n {
			rc := reputation.Receipt{
				Lease:    fmt.Sprint("lease-", rapid.IntRange(0, 60).Draw(rt, "lease")),
				Provider: rapid.SampledFrom([]string{"p1", "p2", "self"}).Draw(rt, "provider"),
				Renter:   rapid.SampledFrom([]string{"r1", "r2", "p1"}).Draw(rt, "renter"),
				At:       t0.Add(time.Duration(rapid.IntRange(0, 1000).Draw(rt, "at")) * time.Hour),
				State:    rapid.SampledFrom(reputation.States).Draw(rt, "state"),
				GPUHours: float64(rapid.IntRange(0, 8).Draw(rt, "hours")),
			}
			id := fmt.Sprint("id-", i)
			would := b.refusal(id, rc) == ""
			if keep, _ := b.admit(id, rc); keep != would {
				rt.Fatalf("receipt %d: admit kept it %v, refusal said it would: %v", i, keep, would)
			}
			// The plain rules.
			switch {
			case rc.Provider == "self" || rc.Renter == "self":
				held[id] = rc
				continue
			case rc.Provider == rc.Renter:
				continue
			}
			samePair := func(x reputation.Receipt) bool {
				return x.Provider == rc.Provider && x.Renter == rc.Renter && x.Provider != "self"
			}
			dup := ""
			for k, x := range held {
				if samePair(x) && x.Lease == rc.Lease {
					dup = k
				}
			}
			if dup != "" && !firstOfLease(rc, held[dup]) {
				continue
			}
			delete(held, dup)
			held[id] = rc
			if count(held, samePair) > b.keep {
				delete(held, lightest(samePair))
			}
			sameProvider := func(x reputation.Receipt) bool { return x.Provider == rc.Provider && x.Renter != "self" }
			if count(held, sameProvider) > b.perProvider {
				delete(held, lightest(sameProvider))
			}
			gossiped := func(x reputation.Receipt) bool { return x.Provider != "self" && x.Renter != "self" }
			for count(held, gossiped) > b.max {
				delete(held, lightest(gossiped))
			}
			// The book holds the same receipts, and its heap is whole.
			if len(b.byID) != len(held) {
				rt.Fatalf("after %d: the book holds %d receipts, the rules %d", i, len(b.byID), len(held))
			}
			for k := range held {
				if _, ok := b.byID[k]; !ok {
					rt.Fatalf("after %d: the rules keep %s, the book does not", i, k)
				}
			}
			for j, h := range b.light.items {
				if h.at != j {
					rt.Fatalf("heap item %d thinks it is at %d", j, h.at)
				}
			}
		}
	})
}

func count(held map[string]reputation.Receipt, in func(reputation.Receipt) bool) int {
	n := 0
	for _, x := range held {
		if in(x) {
			n++
		}
	}
	return n
}

// TestReceiptOfAnUncheckedProviderIsWithheld: a receipt of a provider
// this node never checked a record of is a claim any two fresh keys can
// make: withheld (neither kept nor passed on) and counted.
func TestReceiptOfAnUncheckedProviderIsWithheld(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	renter, prov := peers[1], peers[2]
	raw := sealReceipt(t, renter, prov, "lease-1", peers[0].Clock.Now(), 1)
	if v := gossip(t, tr, renter, raw); v != p2p.Withhold {
		t.Fatalf("a receipt of a provider nobody checked: %v, want withheld", v)
	}
	if got := storedReceipts(t, tr); len(got) != 0 {
		t.Fatalf("stored %q", got)
	}
	if n := testutil.ToFloat64(tr.receiptsDropped.WithLabelValues(receiptDropUnbacked)); n != 1 {
		t.Errorf("receipts dropped as unbacked: %v, want 1", n)
	}
	markBacked(tr, prov)
	if v := gossip(t, tr, renter, raw); v != p2p.Accept {
		t.Fatalf("the same receipt once the provider's record was checked: %v", v)
	}
}
