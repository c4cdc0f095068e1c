package renter

import (
	"slices"

	"github.com/idlegrid/idlegrid/attest"
)

// keepTail moves verifyFrom past the verified entries the next window's
// checks no longer need. They need the last entry (continuity and time
// link the next one to it) and, for each leased GPU, the last window
// attributing it to the lease (coverage measures the next gap from it);
// the fingerprints stay in py.fingerprints. The tail starts at the
// oldest of those windows, and coverage is checked from its start. Until
// every leased GPU has a window, it stays at the lease's start. Entries
// before the tail are kept up to maxProofEntries, for a double-lease
// proof, and dropped beyond.
func (py *payer) keepTail() {
	from := len(py.entries) - 1 // a CPU lease: the window just verified
	if n := len(py.l.GPUs); n > 0 {
		found := map[string]bool{}
		for i := len(py.entries) - 1; i >= py.verifyFrom && len(found) < n; i-- {
			e, err := attest.OpenEntry(py.entries[i])
			if err != nil || e.Telemetry == nil {
				continue
			}
			for _, g := range e.Telemetry.GPUs {
				if g.Lease == py.l.ID && slices.Contains(py.l.GPUs, g.UUID) && !found[g.UUID] {
					found[g.UUID], from = true, i
				}
			}
		}
		if len(found) < n {
			return
		}
	}
	if e, err := attest.OpenEntry(py.entries[from]); err == nil && e.Telemetry != nil {
		py.verifyFrom, py.scopeStartMs = from, e.Telemetry.StartMs
	}
	// Drop in batches, so the copy is rare.
	if over := len(py.entries) - maxProofEntries; over >= proofSlack {
		drop := min(over, py.verifyFrom)
		py.entries = slices.Clone(py.entries[drop:])
		py.verifyFrom -= drop
	}
}

// proofSlack is how far past maxProofEntries entries grow before the
// oldest are dropped.
const proofSlack = 64

func (py *payer) hasFingerprint(raw []byte) bool {
	for _, f := range py.fingerprints {
		if string(f) == string(raw) {
			return true
		}
	}
	return false
}

func (py *payer) verifyOptions() attest.VerifyOptions {
	t, l := py.terms, py.l
	start := l.StartsAtMs
	if cur, err := py.d.db.GetLease(l.ID); err == nil && cur.WorkStartedMs != 0 {
		start = cur.WorkStartedMs
	}
	if py.scopeStartMs != 0 {
		start = py.scopeStartMs
	}
	return attest.VerifyOptions{
		Provider: l.Provider, NowMs: py.d.now().UnixMilli(), MaxSkewMs: t.MaxSkew().Milliseconds(),
		Fingerprints: py.fingerprints,
		// The verifier counts in percent: a permille tolerance rounds up,
		// never holding the provider to less than agreed.
		EnergyTolerancePct: (t.EnergyTolPermille + 9) / 10,
		Lease:              &attest.LeaseScope{ID: l.ID, Renter: l.Renter, StartMs: start, GPUs: l.GPUs},
		MaxGapMs:           t.Allowance().Milliseconds(),
	}
}
