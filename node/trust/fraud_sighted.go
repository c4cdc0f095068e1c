package trust

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// A proven cheat reaches nodes that have not heard its proof: a new node,
// one that was offline when the proof went round. They take its digest
// and pass it on, and the hourly repeats (fraud_repeat.go) reach them
// only within the hour. But a node that holds the proof sees that digest
// come in from the peer that passed it on (admitBlocked), which is the
// sign that its neighbourhood does not know. So it brings the proof out
// again at once, after a random delay of up to sightJitter so that of
// the nodes that see the digest together about one publishes and the
// others hear it first; and not again while a proof against the offender
// was heard within sightRepeatAfter, so an offender that keeps its
// digest going costs the network one proof per sightRepeatAfter.

const (
	sightRepeatAfter = 10 * time.Minute
	sightJitter      = 10 * time.Second
	// maxSightings bounds the sightings waiting for their delay; past it
	// a sighting is dropped (the hourly repeat still comes).
	maxSightings = 32
)

// sighting is a blocked offender's digest seen at at.
type sighting struct {
	offender string
	at       time.Time
}

// sightBlocked notes that a digest of offender, blocked here, was passed
// on by a peer: unless a proof against it was heard lately, its proof
// (if this node holds one for good) is published again soon.
func (t *Trust) sightBlocked(offender string) {
	now := t.now()
	if now.Sub(t.repeats.last(offender)) < sightRepeatAfter {
		return
	}
	// Noted as heard now: the next sightings wait, and a proof heard from
	// another node after now puts this one off (runSightings).
	t.repeats.hear(offender, now)
	select {
	case t.sightings <- sighting{offender, now}:
	default:
	}
}

// runSightings publishes the proofs of sighted offenders, each after its
// random delay.
func (t *Trust) runSightings(ctx context.Context) {
	for {
		var s sighting
		select {
		case <-ctx.Done():
			return
		case s = <-t.sightings:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rand.N(sightJitter)):
		}
		if t.repeatSighted(ctx, s) {
			t.log.Info("fraud proof published again: a peer passed on the cheat's digest", "offender", s.offender)
		}
	}
}

// repeatSighted publishes the proof held for good against a sighted
// offender, unless one was heard from another node since the sighting.
func (t *Trust) repeatSighted(ctx context.Context, s sighting) bool {
	if t.repeats.last(s.offender).After(s.at) {
		return false // heard from another node meanwhile
	}
	raw, err := t.db.FraudForGood(s.offender)
	if err != nil {
		return false // banned, or a stranger's proof: nothing to repeat
	}
	f, err := attest.OpenFraudProof(raw)
	if err != nil {
		return false // a wrong-result proof (each costs its receivers a re-run), or another release's
	}
	return t.repeatProof(ctx, *f, t.now())
}
