package provider

import (
	"fmt"
	"math"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// leaseEntries returns the chain entries that attest one of this
// provider's leases: the fingerprint in force, then the entries from the
// lease's start to its end.
func (a *attestor) leaseEntries(l *store.Lease) ([][]byte, error) {
	if l.ChainSeq == 0 {
		return nil, fmt.Errorf("lease %s never started", lease.Short(l.ID))
	}
	last := uint64(math.MaxUint64)
	if l.ChainLast != 0 {
		last = l.ChainLast
	}
	var raws [][]byte
	if fp := a.currentFingerprint(); fp != nil {
		raws = append(raws, fp)
	}
	entries, err := a.db.ChainEntries(a.self.String(), l.ChainSeq, last)
	if err != nil {
		return nil, err
	}
	return append(raws, entries...), nil
}

// currentFingerprint returns the raw fingerprint entry in force, which a
// verifier of later telemetry needs; nil before the first. It is the one
// this attestor appended, or else one found among the last
// fingerprintLookBack entries (at open). A chain whose fingerprint lies
// deeper has none in force here, so fingerprint() states it again rather
// than reading back through months of telemetry.
func (a *attestor) currentFingerprint() []byte {
	h := a.chain.Head()
	if h == nil || h.Fingerprint == "" {
		return nil
	}
	if p := a.fingerprintRaw.Load(); p != nil && attest.RecordID(*p).String() == h.Fingerprint {
		return *p
	}
	from := uint64(0)
	if h.Seq > fingerprintLookBack {
		from = h.Seq - fingerprintLookBack
	}
	raws, err := a.db.ChainEntries(a.chain.Provider(), from, h.Seq)
	if err != nil {
		return nil
	}
	for i := len(raws) - 1; i >= 0; i-- {
		if attest.RecordID(raws[i]).String() == h.Fingerprint {
			a.fingerprintRaw.Store(&raws[i])
			return raws[i]
		}
	}
	return nil
}

// fingerprintLookBack bounds how far back currentFingerprint reads the
// store for a fingerprint it did not append itself.
const fingerprintLookBack = 4096
