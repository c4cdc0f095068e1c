package trust

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// The background (Trust.Run) folds the evidence at once after an outcome
// that counts against a provider (Invalidate); evidence readers need not
// wait for (Refresh: another renter's receipt, a completed lease) at most
// every reputationFoldEvery; and with no new evidence every
// reputationRefoldEvery, within reputationStaleMax so that no reader folds.
// Readers take the last fold: on the award's path a fold held awards up
// by 0.4-0.5 s at 200 nodes on two saturated cores, since every receipt
// another renter gossiped had made the next read fold again. A fold's
// cost grows with the evidence held (BenchmarkReputationFold: 0.21 s for
// 50,000 own leases and 50,000 receipts, with the own outcomes and the
// receipt book in memory; 0.56 s when it read them all from the store),
// and receipts come about as often as leases end in the shard: folding
// at each one's Refresh, as often as every second, would take a core.
const (
	reputationFoldEvery   = 5 * time.Second
	reputationRefoldEvery = 20 * time.Second
)

// reputationStaleMax is the oldest fold a reader takes when the
// background has not folded (Trust.Run not running): past it the reader
// folds itself.
const reputationStaleMax = 30 * time.Second

// ReputationBook folds this node's stored evidence into provider scores
// (package attest/reputation): its own leases' outcomes, receipts other
// renters gossiped, heartbeat uptime and verified fraud proofs. Every
// score is recomputable from the store.
type ReputationBook struct {
	t   *Trust
	cfg reputation.Config
	now func() time.Time

	// foldMu makes one fold at a time.
	foldMu sync.Mutex
	// mu guards the last fold: its results, when it read the evidence,
	// and gen, which Invalidate bumps so that a fold that read the
	// evidence before an outcome is not served after it.
	mu      sync.Mutex
	at      time.Time
	results map[string]reputation.Result
	gen     uint64
	// stale: evidence came since the last fold that a reader need not
	// wait for (Refresh); the next background fold takes it.
	stale bool
	// kick wakes the background fold after Invalidate.
	kick chan struct{}
	// foldEvery is reputationFoldEvery (a test's shorter); folded is the
	// wall time of the last fold, which paces the background's.
	foldEvery time.Duration
	folded    time.Time
	// own is this node's ended leases, kept as they end (own_outcomes.go).
	own ownOutcomes
}

func newReputationBook(t *Trust) *ReputationBook {
	return &ReputationBook{t: t, cfg: ReputationConfig(t.cfg.ReliabilityPrior), now: t.now, kick: make(chan struct{}, 1),
		foldEvery: reputationFoldEvery}
}

// ReputationConfig is the fold of a node whose market.reliability_prior
// is prior; auction/sim's idlegrid-node row replays the same (a test in
// package node checks).
func ReputationConfig(prior float64) reputation.Config {
	cfg := reputation.DefaultConfig()
	cfg.Prior = prior
	return cfg
}

// Invalidate says an outcome changed the evidence (a lease ended, fraud
// was proven): no read is served a fold from before it. The background
// folds at once, so the next award rarely waits.
func (r *ReputationBook) Invalidate() {
	r.mu.Lock()
	r.gen++
	r.results = nil
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// LeaseEnded takes one of this node's leases reaching its outcome. An
// outcome that counts against its provider (a failure) is one no read
// may miss: the next award must not offer that provider as if it had
// not failed, so it waits for the fold that takes it in (Invalidate).
// One that does not (a completion, a preemption) only raises or keeps
// the provider's score, which the background folds in within
// reputationFoldEvery; awards do not wait for it (Refresh). At 200 nodes
// the awards that waited for a fold after a completed lease waited
// 0.5-2 s.
func (r *ReputationBook) LeaseEnded(l *store.Lease) {
	r.own.ended(l)
	if r.cfg.Effects[outcomeState(l)] == reputation.EffectFailure {
		r.Invalidate()
		return
	}
	r.Refresh()
}

// Refresh says evidence came that a reader need not wait for (a receipt
// another renter gossiped): the next background fold takes it.
func (r *ReputationBook) Refresh() {
	r.mu.Lock()
	r.stale = true
	r.mu.Unlock()
}

// All returns every known provider's result: the last fold, or a fold of
// its own when there is none since the last Invalidate or it is older
// than reputationStaleMax.
func (r *ReputationBook) All() map[string]reputation.Result {
	r.mu.Lock()
	res, at := r.results, r.at
	r.mu.Unlock()
	if res != nil && r.now().Sub(at) < reputationStaleMax {
		return res
	}
	return r.fold(true)
}

// runFolds folds in the background until ctx ends: at once after an
// Invalidate; after a Refresh once the last fold is foldEvery old; and
// reputationRefoldEvery after the last fold.
func (r *ReputationBook) runFolds(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			r.fold(false)
		case <-tick.C:
			r.mu.Lock()
			due := foldDue(r.results != nil, r.stale, time.Since(r.folded), r.foldEvery)
			r.mu.Unlock()
			if due {
				r.fold(false)
			}
		}
	}
}

// foldDue says whether the background folds now: with no fold to serve,
// with evidence readers need not wait for (stale) once the last fold is
// every old, and reputationRefoldEvery after the last fold.
func foldDue(have, stale bool, since, every time.Duration) bool {
	return !have || stale && since >= every || since >= reputationRefoldEvery
}

// fold reads the evidence and folds it, one fold at a time. A reader
// (reader true) takes a fold that finished while it waited for its turn.
// A fold during which Invalidate came is served to nobody.
func (r *ReputationBook) fold(reader bool) map[string]reputation.Result {
	r.foldMu.Lock()
	defer r.foldMu.Unlock()
	r.mu.Lock()
	if reader && r.results != nil && r.now().Sub(r.at) < reputationStaleMax {
		res := r.results
		r.mu.Unlock()
		return res
	}
	gen := r.gen
	r.stale = false
	r.mu.Unlock()
	now := r.now()
	res := reputation.Fold(r.evidence(), now, r.cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.folded = time.Now()
	if r.gen == gen {
		r.results, r.at = res, now
	}
	return res
}

// Of returns one provider's result (the prior, for one with no evidence).
func (r *ReputationBook) Of(provider string) reputation.Result {
	if res, ok := r.All()[provider]; ok {
		return res
	}
	return reputation.Score(provider, reputation.Evidence{}, r.now(), r.cfg)
}

// Scores is the matcher's reliability input.
func (r *ReputationBook) Scores() map[string]float64 { return reputation.Scores(r.All()) }

// evidence reads everything the fold needs from the store.
func (r *ReputationBook) evidence() reputation.Evidence {
	ev := reputation.Evidence{Outcomes: r.own.list(r.t.db)}
	if ups, err := r.t.db.Uptimes(); err == nil {
		for _, u := range ups {
			ev.Uptime = append(ev.Uptime, uptimeEvidence(u, r.t.cfg.BeatEvery))
		}
	}
	ev.Receipts = append(ev.Receipts, r.t.receiptEvidence()...)
	ev.Frauds = append(ev.Frauds, r.t.fraudEvidence()...)
	return ev
}

// outcomeState maps a renter's ended lease to reputation evidence. A
// provider this renter could not reach counts as unreachable, whatever
// the lease's recorded state.
func outcomeState(l *store.Lease) reputation.State {
	switch l.State {
	case lease.Completed:
		return reputation.StateCompleted
	case lease.Expired:
		return reputation.StateExpired
	case lease.Preempted:
		return reputation.StatePreempted
	case lease.Cancelled:
		return reputation.StateCancelledByRenter
	}
	if strings.Contains(l.Reason, "unreachable") {
		return reputation.StateUnreachable
	}
	return reputation.StateFailed
}

// bookedGPUHours is a lease's size as awarded: GPUs times its expected
// duration (booked, not delivered: failing early does not make a failure
// cheaper).
func bookedGPUHours(l *store.Lease) float64 {
	return float64(len(l.GPUs)) * float64(l.ExpectedSec) / 3600
}

// uptimeEvidence turns heartbeat observations into an uptime window: one
// heartbeat expected per slot (attest.BeatSlot) from the first heard to
// the last.
func uptimeEvidence(u *store.Uptime, every time.Duration) reputation.Uptime {
	from, to := time.UnixMilli(u.FirstMs), time.UnixMilli(u.LastMs)
	expected := attest.BeatSlotsSpanned(u.Provider, u.FirstMs, u.LastMs, every)
	return reputation.Uptime{Provider: u.Provider, From: from, To: to, Seen: int(min(u.Seen, uint64(expected))), Expected: expected}
}
