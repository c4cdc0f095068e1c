package trust

import (
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ownReloadEvery is how often the reputation fold reads this node's own
// ended leases from the store again. In between it takes each outcome as
// the renter reports it (ReputationBook.LeaseEnded): reading every lease
// at each fold was about 60 % of a fold's cost (BenchmarkReputationFold),
// and lease history is never pruned. The reload is the backstop for an
// outcome no path reported (a lease ended while the node was down is read
// at the first fold).
const ownReloadEvery = 5 * time.Minute

// ownOutcomes is this node's own ended leases as reputation evidence, by
// lease ID.
type ownOutcomes struct {
	mu     sync.Mutex
	by     map[string]reputation.Outcome // nil until the first load
	loaded time.Time                     // wall time of the last load
	// during holds outcomes reported while a load read the store, which
	// the load might have read before they were stored.
	loading bool
	during  map[string]reputation.Outcome
}

// ownOutcome is a renter's ended lease as evidence; ok false for any
// other lease.
func ownOutcome(l *store.Lease) (reputation.Outcome, bool) {
	if l.Side != lease.SideRenter || !lease.State(l.State).Terminal() {
		return reputation.Outcome{}, false
	}
	return reputation.Outcome{
		Lease: l.ID, Provider: l.Provider, EndedAt: time.UnixMilli(l.UpdatedAtMs),
		State: outcomeState(l), GPUHours: bookedGPUHours(l),
	}, true
}

// ended takes an outcome the renter reported.
func (o *ownOutcomes) ended(l *store.Lease) {
	out, ok := ownOutcome(l)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by != nil {
		o.by[out.Lease] = out
	}
	if o.loading {
		o.during[out.Lease] = out
	}
}

// list returns every own outcome, reading the store when it has not been
// read for ownReloadEvery. One caller at a time (the fold's lock).
func (o *ownOutcomes) list(db *store.DB) []reputation.Outcome {
	o.mu.Lock()
	if o.by == nil || time.Since(o.loaded) >= ownReloadEvery {
		o.loading, o.during = true, map[string]reputation.Outcome{}
		o.mu.Unlock()
		fresh := map[string]reputation.Outcome{}
		leases, err := db.Leases()
		for _, l := range leases {
			if out, ok := ownOutcome(l); ok {
				fresh[out.Lease] = out
			}
		}
		o.mu.Lock()
		for id, out := range o.during {
			fresh[id] = out
		}
		o.loading, o.during = false, nil
		switch {
		case err == nil:
			o.by, o.loaded = fresh, time.Now()
		case o.by == nil:
			o.by = fresh // what was reported; the next fold reads again
		}
	}
	defer o.mu.Unlock()
	out := make([]reputation.Outcome, 0, len(o.by))
	for _, x := range o.by {
		out = append(out, x)
	}
	return out
}
