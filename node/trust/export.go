package trust

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
)

// ExportAttestations gathers the chain entries that attest a lease: from
// this node's own chain (a provider), or fetched from the lease's provider
// (a renter).
func (t *Trust) ExportAttestations(ctx context.Context, leaseID string) (*attest.Export, error) {
	l, err := t.db.GetLease(leaseID)
	if err != nil {
		return nil, fmt.Errorf("export attestations: %w", err)
	}
	x := &attest.Export{Version: 1, Provider: l.Provider}
	x.Lease.ID, x.Lease.Renter, x.Lease.GPUs = l.ID, l.Renter, l.GPUs
	x.Lease.StartMs = l.WorkStartedMs
	if lease.State(l.State).Terminal() {
		x.Lease.EndMs = l.WorkFinishedMs
	}
	var raws [][]byte
	switch {
	case l.Side == lease.SideProvider && t.leaseEntries != nil:
		if raws, err = t.leaseEntries(l); err != nil {
			return nil, fmt.Errorf("export attestations: %w", err)
		}
	default:
		p, err := peer.Decode(l.Provider)
		if err != nil {
			return nil, err
		}
		_, fr, err := lease.Call(ctx, t.p2p, p, &jobproto.Request{Op: jobproto.OpAttest, Lease: l.ID})
		if err != nil {
			return nil, fmt.Errorf("export attestations: from the provider: %w", err)
		}
		defer fr.Close()
		for {
			b, err := fr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("export attestations: from the provider: %w", err)
			}
			raws = append(raws, append([]byte(nil), b...))
		}
	}
	for _, raw := range raws {
		e, err := attest.OpenEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("export attestations: %w", err)
		}
		if len(x.Entries) == 0 && e.Fingerprint != nil {
			x.Fingerprints = append(x.Fingerprints, raw)
			continue
		}
		x.Entries = append(x.Entries, raw)
	}
	return x, nil
}
