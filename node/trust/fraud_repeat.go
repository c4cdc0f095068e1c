package trust

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/p2p"
)

// A fraud proof is gossiped once, when it is found: a node that was
// offline then, or joins later, never hears it, and could lease from a
// provider every other node refuses. So nodes repeat what they hold: the
// evidence of a proof this node keeps for good (against a provider it
// had checked a record of) is published again once nobody was heard
// publishing a proof against that offender for a while
// (Config.FraudRepeatEvery, an hour by default), at most maxFraudRepeats
// in a round, those heard of longest ago first. Hearing a proof, from
// anyone, puts the repeat off at every node that hears it: rounds come at
// random phases, so about one node repeats each offender's proof per
// period, whatever the network's size.
//
// A repeat is the stored proof sealed afresh with this node as reporter
// (the evidence, the offender's own signed entries, and the proof's date
// unchanged): gossipsub drops a message it has seen, by ID, for two to
// three minutes, the publisher its own too, so the stored bytes again
// would reach nobody until then.
//
// Not repeated: proofs against strangers (any key can prove its own
// cheating: repeating those would make self-made proofs cost the network
// for ever) and wrong-result proofs (each costs its receivers a re-run).

const (
	// DefaultFraudRepeatEvery is how long a proof goes unheard before
	// this node repeats it.
	DefaultFraudRepeatEvery = time.Hour
	// maxFraudRepeats bounds the proofs one round publishes.
	maxFraudRepeats = 32
	// maxFraudsHeard bounds the offenders whose last hearing is remembered;
	// past it the memory starts over (at worst a repeat comes early).
	maxFraudsHeard = 1 << 14
)

// fraudRepeats remembers when a proof against each offender was last
// heard or published, since this node started: an offender not heard of
// since counts from the start, so a restarted node repeats nothing for a
// period (a restart is no news, and each would otherwise reach every
// node).
type fraudRepeats struct {
	mu      sync.Mutex
	started time.Time
	heard   map[string]time.Time
}

// hear notes that a proof against offender went by at now.
func (f *fraudRepeats) hear(offender string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.heard == nil || len(f.heard) >= maxFraudsHeard {
		f.heard = map[string]time.Time{}
	}
	f.heard[offender] = now
}

// last is when a proof against offender was last heard, or when this
// node started.
func (f *fraudRepeats) last(offender string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if at, ok := f.heard[offender]; ok {
		return at
	}
	return f.started
}

// runFraudRepeats repeats due proofs, in rounds a quarter of the period
// apart at a random phase.
func (t *Trust) runFraudRepeats(ctx context.Context) {
	every := cmp.Or(t.cfg.FraudRepeatEvery, DefaultFraudRepeatEvery)
	t.repeats.mu.Lock()
	t.repeats.started = t.now()
	t.repeats.mu.Unlock()
	for {
		wait := every/8 + rand.N(every/4) // rounds at this node's own random phase
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		t.repeatFrauds(ctx, every)
	}
}

// repeatFrauds publishes again the proofs held for good whose offender
// nobody was heard of for every, those heard of longest ago first, at
// most maxFraudRepeats; it returns how many it published.
func (t *Trust) repeatFrauds(ctx context.Context, every time.Duration) int {
	proofs, err := t.db.FraudsForGood()
	if err != nil {
		t.log.Warn("repeat fraud proofs", "err", err)
		return 0
	}
	now := t.now()
	type due struct {
		proof *attest.FraudProof
		at    time.Time
	}
	var dues []due
	for _, raw := range proofs {
		f, err := attest.OpenFraudProof(raw)
		if err != nil {
			continue // a wrong-result proof, or another release's
		}
		if at := t.repeats.last(f.Offender); now.Sub(at) >= every {
			dues = append(dues, due{f, at})
		}
	}
	slices.SortFunc(dues, func(a, b due) int { return a.at.Compare(b.at) })
	n := 0
	for _, d := range dues[:min(len(dues), maxFraudRepeats)] {
		if t.repeatProof(ctx, *d.proof, now) {
			n++
		}
	}
	return n
}

// repeatProof publishes f again, sealed by this node, and notes it heard.
func (t *Trust) repeatProof(ctx context.Context, f attest.FraudProof, now time.Time) bool {
	f.Reporter = t.selfStr
	raw, err := attest.SealFraudProof(&f, t.key)
	if err != nil {
		t.log.Warn("repeat fraud proof", "offender", f.Offender, "err", err)
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = t.publish(pctx, p2p.TopicFraud, raw)
	cancel()
	if err != nil {
		t.log.Debug("repeat fraud proof", "err", err)
		return false
	}
	t.repeats.hear(f.Offender, now)
	t.fraudsRepeated.Inc()
	return true
}
