package provider

import (
	"fmt"
	"math"

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
