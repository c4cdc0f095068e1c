package trust

import (
	"github.com/prometheus/client_golang/prometheus/testutil"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// freshEquivocation is a fresh key's proof of its own equivocation,
// sealed by reporter: all it takes to make a fraud proof out of nothing.
func freshEquivocation(t *testing.T, reporter *roomtest.Peer, at time.Time) (peer.ID, []byte) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	return equivocationOf(t, reporter, sk, at)
}

// equivocationOf is reporter's proof that sk's peer signed two
// fingerprint entries with seq 0.
func equivocationOf(t *testing.T, reporter *roomtest.Peer, sk crypto.PrivKey, at time.Time) (peer.ID, []byte) {
	t.Helper()
	id, _ := peer.IDFromPrivateKey(sk)
	var entries [][]byte
	for _, driver := range []string{"550.54.15", "550.54.14"} {
		c, err := attest.NewChain(sk, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _, err := c.Append(at.UnixMilli(), &attest.Fingerprint{Driver: driver, CUDA: "12.4", GPUs: []attest.GPUFact{{
			UUID: "GPU-11111111-2222-3333-4444-555555555555", Name: "NVIDIA A10", PCIDeviceID: 0x223610de, MemoryMiB: 24564,
			ComputeCap: "8.6", PowerLimitMW: 150_000,
		}}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, raw)
	}
	proof, err := attest.SealFraudProof(&attest.FraudProof{V: attest.RecordsVersion, Reporter: reporter.ID.String(),
		Kind: attest.FraudEquivocation, Offender: id.String(), Entries: entries, AtMs: at.UnixMilli()}, reporter.Key)
	if err != nil {
		t.Fatal(err)
	}
	return id, proof
}

// TestFraudAgainstStrangersIsBounded: proofs against peers this node
// never checked a record of (any fresh key can prove its own
// equivocation) are kept for a while and at most so many, their offenders
// refused for a while, not blocked for good; a proof against a provider
// of this node's market is kept and blocked for good, whatever the
// strangers' flood.
func TestFraudAgainstStrangersIsBounded(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	tr.strangerFrauds = 3
	now := peers[0].Clock.Now()
	real := peers[2]
	markBacked(tr, real)
	realID, realProof := equivocationOf(t, peers[1], real.Key, now)
	tr.ApplyFraud(realProof)
	var strangers []peer.ID
	for range 6 {
		id, proof := freshEquivocation(t, peers[1], now)
		tr.ApplyFraud(proof)
		strangers = append(strangers, id)
	}
	raws, err := tr.db.Frauds()
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 1+tr.strangerFrauds {
		t.Fatalf("%d proofs stored, want the market provider's and %d strangers'", len(raws), tr.strangerFrauds)
	}
	if r := tr.Reputation().Of(realID.String()); !r.Fraud {
		t.Fatalf("the market provider's proof was pushed out: %+v", r)
	}
	if !tr.p2p.Blocked(realID) {
		t.Error("the proven market provider is not blocked")
	}
	// Which strangers' proofs stay is which end last: here, written
	// within one second of each other, any of them.
	kept := 0
	for _, s := range strangers {
		if !tr.p2p.Blocked(s) {
			t.Errorf("stranger %s, proven, is not refused", s)
		}
		if tr.Reputation().Of(s.String()).Fraud {
			kept++
		}
	}
	if kept != tr.strangerFrauds {
		t.Errorf("%d strangers' proofs count in reputation, want %d", kept, tr.strangerFrauds)
	}
	if got := len(tr.fraudEvidence()); got != 1+tr.strangerFrauds {
		t.Errorf("fraud evidence of %d proofs, want %d", got, 1+tr.strangerFrauds)
	}
	// The operator sees every refused stranger in the peers view, with
	// the reason and the end of its refusal.
	listed := map[peer.ID]Peer{}
	for _, p := range tr.Peers() {
		listed[p.ID] = p
	}
	for _, s := range strangers {
		p, ok := listed[s]
		if !ok || !p.Banned || p.BanReason != StrangerFraudReason || p.BannedUntil.Before(time.Now().Add(strangerFraudFor-time.Hour)) {
			t.Errorf("refused stranger %s in the peers view: %+v (listed %v)", s, p, ok)
		}
	}
}

// TestFraudsForGoodAreBounded: past forGoodFrauds, the proof kept for good
// against a provider this node never dealt with, the oldest first, makes
// room: it is kept for a while and its offender refused as a stranger;
// a provider this node leased from stays blocked for good, though its
// proof is the oldest. A proof against an offender already kept for good
// demotes nothing, and after a restart each offender is refused as its
// proof is kept.
func TestFraudsForGoodAreBounded(t *testing.T) {
	peers := roomtest.Peers(t, 7)
	tr := newTrust(t, peers[0])
	tr.forGoodFrauds, tr.strangerFrauds = 3, 10
	now := peers[0].Clock.Now()
	provs := peers[2:]
	markBacked(tr, provs...)
	dealt := sealReceipt(t, peers[0], provs[0], "lease-dealt", now.Add(-time.Hour), 1)
	if err := tr.db.PutReceipt(attest.RecordID(dealt).String(), dealt); err != nil {
		t.Fatal(err)
	}
	_ = tr.receiptEvidence()
	proofs := map[peer.ID][]byte{}
	for _, p := range provs {
		_, proofs[p.ID] = equivocationOf(t, peers[1], p.Key, now)
		tr.ApplyFraud(proofs[p.ID])
	}
	tr.ApplyFraud(proofs[provs[4].ID]) // again: already kept for good
	forGood, demoted := []peer.ID{provs[0].ID, provs[3].ID, provs[4].ID}, []peer.ID{provs[1].ID, provs[2].ID}
	if n := testutil.ToFloat64(tr.fraudsDemoted); n != 2 {
		t.Errorf("proofs demoted: %v, want 2", n)
	}
	checkRefusals := func(tr *Trust, when string) {
		t.Helper()
		rows, err := tr.db.FraudRows()
		if err != nil {
			t.Fatal(err)
		}
		until := map[peer.ID]time.Time{}
		for _, r := range rows {
			id, _ := peer.Decode(r.Peer)
			until[id] = r.Until
		}
		refused := map[peer.ID]bool{}
		for _, r := range tr.p2p.RefusedStrangers() {
			refused[r.Peer] = true
		}
		for _, id := range forGood {
			if u, ok := until[id]; !ok || !u.IsZero() || !tr.p2p.Blocked(id) || refused[id] {
				t.Errorf("%s: %s: stored %v until %v, blocked %v, refused as a stranger %v; want kept and blocked for good",
					when, id, ok, u, tr.p2p.Blocked(id), refused[id])
			}
		}
		for _, id := range demoted {
			if u, ok := until[id]; !ok || u.Before(time.Now().Add(strangerFraudFor-time.Hour)) || !refused[id] {
				t.Errorf("%s: %s: stored %v until %v, refused as a stranger %v; want kept and refused %s",
					when, id, ok, u, refused[id], strangerFraudFor)
			}
		}
		for _, p := range provs {
			if !tr.Reputation().Of(p.ID.String()).Fraud {
				t.Errorf("%s: %s's proof does not count in its reputation", when, p.ID)
			}
		}
	}
	checkRefusals(tr, "after the proofs")
	// A restart: a node of another network identity, built on the same
	// store, re-applies them.
	restarted, err := New(Config{ReliabilityPrior: 0.8, Refresh: time.Second, SearchTimeout: 5 * time.Second, BeatEvery: time.Minute},
		Deps{Clock: peers[1].Clock.Now, Key: peers[1].Key, P2P: peers[1].P2P, Store: peers[0].Store})
	if err != nil {
		t.Fatal(err)
	}
	restarted.BlockProven()
	checkRefusals(restarted, "after a restart")
}
