package trust

import (
	"context"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestSightedCheatsProofIsRepeated: a digest of a provider proven to
// cheat, passed on by a peer that has not heard the proof, brings the
// proof out again (sealed by this node, evidence unchanged), once per
// sightRepeatAfter: a second sighting waits, a proof heard from another
// node meanwhile puts the repeat off, and a stranger's proof, which any
// key can make about itself, is not repeated.
func TestSightedCheatsProofIsRepeated(t *testing.T) {
	peers := roomtest.Peers(t, 4)
	self, prov, relay, other := peers[0], peers[1], peers[2], peers[3]
	tr := newTrust(t, self)
	recs := fakeRecords(tr)
	clock := self.Clock
	var published [][]byte
	tr.publish = func(_ context.Context, topic string, data []byte) error {
		published = append(published, data)
		return nil
	}
	ctx := context.Background()
	now := clock.Now()
	recs.put(testCapacity(prov.Key, now))
	topic := auction.GPUShard("a10").DigestTopic()
	tr.ValidateDigest(topic)(ctx, prov.ID, prov.ID, sealedDigest(t, prov.Key, now, 2))
	drainChecks(t, tr)
	_, proof := equivocationOf(t, other, prov.Key, now)
	tr.ApplyFraud(proof)
	tr.repeats.hear(prov.ID.String(), now) // the proof went round just now
	clock.Advance(sightRepeatAfter)

	// sight passes on a digest of prov and returns the sighting queued.
	sight := func(seq uint64) (sighting, bool) {
		t.Helper()
		if v := tr.ValidateDigest(topic)(ctx, relay.ID, "", sealedDigest(t, prov.Key, clock.Now(), seq)); v != p2p.Withhold {
			t.Fatalf("the cheat's digest: %v, want withheld", v)
		}
		select {
		case s := <-tr.sightings:
			return s, true
		default:
			return sighting{}, false
		}
	}
	s, ok := sight(3)
	if !ok {
		t.Fatal("the cheat's digest passed on by a peer was not sighted")
	}
	if _, again := sight(4); again {
		t.Error("a second sighting right after the first was queued")
	}
	if !tr.repeatSighted(ctx, s) || len(published) != 1 {
		t.Fatalf("the sighted cheat's proof was not published (%d)", len(published))
	}
	f, err := attest.OpenFraudProof(published[0])
	if err != nil || f.Reporter != self.ID.String() || f.Offender != prov.ID.String() {
		t.Fatalf("published %+v, %v: want the proof against the cheat, sealed by this node", f, err)
	}

	// Another node's proof heard after a sighting puts it off.
	clock.Advance(sightRepeatAfter)
	s, ok = sight(5)
	if !ok {
		t.Fatal("not sighted again after sightRepeatAfter")
	}
	clock.Advance(1)
	tr.repeats.hear(prov.ID.String(), clock.Now())
	if tr.repeatSighted(ctx, s) || len(published) != 1 {
		t.Error("published although another node's proof was heard since the sighting")
	}

	// A stranger's proof is not repeated on sight.
	strangerID, stranger := freshEquivocation(t, other, clock.Now())
	tr.ApplyFraud(stranger)
	if tr.repeatSighted(ctx, sighting{strangerID.String(), clock.Now()}) || len(published) != 1 {
		t.Error("a stranger's proof was published on sight")
	}
}
