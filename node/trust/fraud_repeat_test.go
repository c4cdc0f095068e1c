package trust

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestFraudProofsAreRepeated: a proof this node holds for good is
// published again, sealed by this node with the same evidence and date,
// once nobody was heard publishing one against its offender for a
// period, counted from this node's start (a restart repeats nothing at
// once); hearing one from anyone puts the repeat off. A proof against a
// stranger is never repeated, and a round publishes at most
// maxFraudRepeats, those heard of longest ago first.
func TestFraudProofsAreRepeated(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	clock := peers[0].Clock
	var published [][]byte
	tr.publish = func(_ context.Context, topic string, data []byte) error {
		if topic != p2p.TopicFraud {
			t.Errorf("published on %s", topic)
		}
		published = append(published, data)
		return nil
	}
	take := func() [][]byte { out := published; published = nil; return out }
	ctx := context.Background()
	const every = time.Hour
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	cheat, proof := equivocationOf(t, peers[1], sk, clock.Now())
	tr.ev.update(cheat.String(), clock.Now(), func(ev *peerEvidence) { ev.everBacked = true })
	tr.ApplyFraud(proof)
	_, stranger := freshEquivocation(t, peers[1], clock.Now())
	tr.ApplyFraud(stranger)
	tr.repeats.started = clock.Now() // as runFraudRepeats does

	if n := tr.repeatFrauds(ctx, every); n != 0 {
		t.Fatalf("repeated %d proofs at the start", n)
	}
	clock.Advance(every)
	if n := tr.repeatFrauds(ctx, every); n != 1 {
		t.Fatalf("repeated %d proofs a period after the start, want 1 (not the stranger's)", n)
	}
	got := take()
	if len(got) != 1 {
		t.Fatalf("published %d proofs, want the one held for good", len(got))
	}
	orig, _ := attest.OpenFraudProof(proof)
	again, err := attest.OpenFraudProof(got[0])
	if err != nil {
		t.Fatal(err)
	}
	if offender, err := attest.VerifyFraudProof(got[0]); err != nil || offender != cheat || again.Reporter != peers[0].ID.String() ||
		again.AtMs != orig.AtMs || !slices.EqualFunc(again.Entries, orig.Entries, bytes.Equal) {
		t.Fatalf("the repeat: %+v (%v), want the proof against %s sealed by this node, evidence and date kept", again, err, cheat)
	}
	if n := tr.repeatFrauds(ctx, every); n != 0 {
		t.Fatalf("repeated %d proofs just after repeating them", n)
	}
	// Someone else repeats it half a period on: this node waits a whole
	// period from then.
	clock.Advance(every / 2)
	if v := tr.ValidateFraud(ctx, peers[1].ID, peers[1].ID, got[0]); v != p2p.Accept {
		t.Fatalf("the repeated proof: %v", v)
	}
	clock.Advance(3 * every / 4)
	if n := tr.repeatFrauds(ctx, every); n != 0 {
		t.Fatalf("repeated a proof heard %s ago", 3*every/4)
	}
	clock.Advance(every / 4)
	if n := tr.repeatFrauds(ctx, every); n != 1 {
		t.Fatalf("repeated %d proofs a period after hearing them, want 1", n)
	}
	take()

	// Past the bound: a round publishes maxFraudRepeats, the proof
	// repeated last among them last; the next round the rest.
	for range maxFraudRepeats + 7 {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, p := equivocationOf(t, peers[1], sk, clock.Now())
		tr.ev.update(id.String(), clock.Now(), func(ev *peerEvidence) { ev.everBacked = true })
		tr.ApplyFraud(p)
	}
	clock.Advance(every)
	if n := tr.repeatFrauds(ctx, every); n != maxFraudRepeats {
		t.Fatalf("one round repeated %d proofs, want %d", n, maxFraudRepeats)
	}
	for _, p := range take() {
		if offender, _ := attest.VerifyFraudProof(p); offender == cheat {
			t.Fatal("the offender repeated a period ago went before ones never heard of")
		}
	}
	if n := tr.repeatFrauds(ctx, every); n != 8 {
		t.Fatalf("the next round repeated %d proofs, want the 8 left", n)
	}
}
