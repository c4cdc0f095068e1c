package renter

import (
	"context"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// maxProofEntries bounds a double-lease proof's segment (attest's limit).
const maxProofEntries = 256

// claims reports whether entry e puts gpu to work for lease (a start
// event, or a telemetry window attributing the GPU to it), and for whom.
func claims(e *attest.Entry, gpu string) (lease, renter string, ok bool) {
	switch {
	case e.Job != nil && e.Job.Event == attest.JobStarted:
		for _, g := range e.Job.GPUs {
			if g == gpu {
				return e.Job.Lease, e.Job.Renter, true
			}
		}
	case e.Telemetry != nil:
		for _, g := range e.Telemetry.GPUs {
			if g.UUID == gpu && g.Lease != "" {
				return g.Lease, g.Renter, true
			}
		}
	}
	return "", "", false
}

// checkDoubleLease looks at the newest entry of the lease's segment: if
// the provider's own chain puts one of this lease's GPUs to work for
// another renter while this lease has not ended, the segment is a
// double-lease proof. The renter seals it, applies it and gossips it.
func (py *payer) checkDoubleLease(ctx context.Context, e *attest.Entry) {
	for _, gpu := range py.l.GPUs {
		lease, renter, ok := claims(e, gpu)
		if !ok || lease == py.l.ID || renter == py.l.Renter {
			continue
		}
		// The segment from this lease's started event, which claims the
		// GPU until the lease's end (attest's overlap rule), or else
		// from the latest claim of ours on that GPU (a window claims
		// only its own time, so that proof holds only if it overlaps).
		from := -1
		for i := len(py.entries) - 2; i >= 0 && len(py.entries)-i <= maxProofEntries; i-- {
			prev, err := attest.OpenEntry(py.entries[i])
			if err != nil {
				return
			}
			if prev.Job != nil && prev.Job.Lease == py.l.ID && prev.Job.Event.Ends() {
				return // our lease ended before: no conflict
			}
			if l, _, ok := claims(prev, gpu); ok && l == py.l.ID {
				if from < 0 || prev.Job != nil {
					from = i
				}
				if prev.Job != nil {
					break // the started event: conclusive
				}
			}
		}
		if from < 0 {
			continue
		}
		proof, err := attest.SealFraudProof(&attest.FraudProof{
			V: attest.RecordsVersion, Reporter: py.d.self.String(), Kind: attest.FraudDoubleLease,
			Offender: py.l.Provider, GPU: gpu, Entries: py.entries[from:], AtMs: py.d.now().UnixMilli(),
		}, py.d.key)
		if err != nil {
			py.d.log.Debug("double lease suspected but not provable", "gpu", gpu, "err", err)
			continue
		}
		py.stop(fmt.Sprintf("the provider leased GPU %s to another renter during this lease (fraud proof published)", gpu))
		py.d.reportFraud(proof)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := py.d.publishFraud(pctx, proof); err != nil {
			py.d.log.Warn("publish fraud proof", "err", err)
		}
		cancel()
		return
	}
}
