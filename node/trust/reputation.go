package trust

import (
	"strings"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// reputationCacheFor bounds how stale a score the matcher may use: the
// fold re-reads the evidence from the store at most this often (and at
// once after a lease ends or fraud is proven).
const reputationCacheFor = 5 * time.Second

// ReputationBook folds this node's stored evidence into provider scores
// (package attest/reputation): its own leases' outcomes, receipts other
// renters gossiped, heartbeat uptime and verified fraud proofs. Every
// score is recomputable from the store.
type ReputationBook struct {
	t   *Trust
	cfg reputation.Config
	now func() time.Time

	mu      sync.Mutex
	at      time.Time
	results map[string]reputation.Result
	// receipts caches verified receipts by record ID: each is checked
	// (two signatures) once, not at every fold.
	receiptsMu sync.Mutex
	receipts   map[string]reputation.Receipt
}

func (r *ReputationBook) parsed(id string) (reputation.Receipt, bool) {
	r.receiptsMu.Lock()
	defer r.receiptsMu.Unlock()
	rc, ok := r.receipts[id]
	return rc, ok
}

func (r *ReputationBook) remember(id string, rc reputation.Receipt) {
	r.receiptsMu.Lock()
	defer r.receiptsMu.Unlock()
	if r.receipts == nil {
		r.receipts = map[string]reputation.Receipt{}
	}
	r.receipts[id] = rc
}

func newReputationBook(t *Trust) *ReputationBook {
	return &ReputationBook{t: t, cfg: ReputationConfig(t.cfg.ReliabilityPrior), now: t.now}
}

// ReputationConfig is the fold of a node whose market.reliability_prior
// is prior; auction/sim's idlegrid-node row replays the same (a test in
// package node checks).
func ReputationConfig(prior float64) reputation.Config {
	cfg := reputation.DefaultConfig()
	cfg.Prior = prior
	return cfg
}

// Invalidate makes the next read fold the evidence again.
func (r *ReputationBook) Invalidate() {
	r.mu.Lock()
	r.at = time.Time{}
	r.mu.Unlock()
}

// All returns every known provider's result.
func (r *ReputationBook) All() map[string]reputation.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.results != nil && now.Sub(r.at) < reputationCacheFor {
		return r.results
	}
	r.results = reputation.Fold(r.evidence(), now, r.cfg)
	r.at = now
	return r.results
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
	var ev reputation.Evidence
	if leases, err := r.t.db.Leases(); err == nil {
		for _, l := range leases {
			if l.Side != lease.SideRenter || !lease.State(l.State).Terminal() {
				continue
			}
			ev.Outcomes = append(ev.Outcomes, reputation.Outcome{
				Lease: l.ID, Provider: l.Provider, EndedAt: time.UnixMilli(l.UpdatedAtMs),
				State: outcomeState(l), GPUHours: bookedGPUHours(l),
			})
		}
	}
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
