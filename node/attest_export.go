package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// AttestationExport is the file `idlegrid attest export LEASE` writes and
// `idlegrid attest verify FILE` checks: a lease's stretch of its
// provider's signed chain, self-contained (the envelopes carry their
// signatures), plus what the lease promised.
type AttestationExport struct {
	Version  int    `json:"version"`
	Provider string `json:"provider"`
	Lease    struct {
		ID      string   `json:"id"`
		Renter  string   `json:"renter"`
		StartMs int64    `json:"start_ms"`
		EndMs   int64    `json:"end_ms,omitempty"`
		GPUs    []string `json:"gpus"`
	} `json:"lease"`
	// Fingerprints are the fingerprint entries in force; Entries the
	// contiguous chain entries from the lease's start to its end.
	Fingerprints [][]byte `json:"fingerprints"`
	Entries      [][]byte `json:"entries"`
}

// maxExportBytes bounds an export file read back for verification.
const maxExportBytes = 256 << 20

// ExportAttestations gathers the chain entries that attest a lease: from
// this node's own chain (a provider), or fetched from the lease's provider
// (a renter).
func (n *Node) ExportAttestations(ctx context.Context, leaseID string) (*AttestationExport, error) {
	l, err := n.db.GetLease(leaseID)
	if err != nil {
		return nil, fmt.Errorf("export attestations: %w", err)
	}
	x := &AttestationExport{Version: 1, Provider: l.Provider}
	x.Lease.ID, x.Lease.Renter, x.Lease.GPUs = l.ID, l.Renter, l.GPUs
	x.Lease.StartMs = l.WorkStartedMs
	if terminalLease(l.State) {
		x.Lease.EndMs = l.WorkFinishedMs
	}
	var raws [][]byte
	switch {
	case l.Side == "provider" && n.attest != nil:
		if l.ChainSeq == 0 {
			return nil, fmt.Errorf("export attestations: lease %s never started", short(l.ID))
		}
		last := uint64(math.MaxUint64)
		if l.ChainLast != 0 {
			last = l.ChainLast
		}
		if fp := n.attest.currentFingerprint(); fp != nil {
			raws = append(raws, fp)
		}
		entries, err := n.db.ChainEntries(n.ID().String(), l.ChainSeq, last)
		if err != nil {
			return nil, fmt.Errorf("export attestations: %w", err)
		}
		raws = append(raws, entries...)
	default:
		p, err := peer.Decode(l.Provider)
		if err != nil {
			return nil, err
		}
		_, fr, err := n.jobCall(ctx, p, &jobproto.Request{Op: jobproto.OpAttest, Lease: l.ID})
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

// Finding is one verifier check's result.
type Finding struct {
	Check   string `json:"check"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
}

// VerifyAttestations checks an export file on its own, with no network:
// signatures and domains, chain continuity, time, fingerprint, value
// ranges, energy against power x time, health and the lease's coverage.
// It returns every check's findings; ok is false when any failed.
func VerifyAttestations(data []byte, cfg AttestConfig, now time.Time) (findings []Finding, ok bool, err error) {
	if len(data) > maxExportBytes {
		return nil, false, fmt.Errorf("verify attestations: file of %d bytes over %d", len(data), maxExportBytes)
	}
	var x AttestationExport
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, false, fmt.Errorf("verify attestations: not an idlegrid attestation export: %w", err)
	}
	if x.Version != 1 || x.Provider == "" || x.Lease.ID == "" {
		return nil, false, errors.New("verify attestations: not an idlegrid attestation export (version, provider or lease missing)")
	}
	rep := attest.Verify(x.Entries, attest.VerifyOptions{
		Provider: x.Provider, NowMs: now.UnixMilli(), MaxSkewMs: cfg.MaxSkew.Milliseconds(),
		Fingerprints: x.Fingerprints, EnergyTolerancePct: uint32(cfg.EnergyTolerance * 100),
		Lease:    &attest.LeaseScope{ID: x.Lease.ID, Renter: x.Lease.Renter, StartMs: x.Lease.StartMs, EndMs: x.Lease.EndMs, GPUs: x.Lease.GPUs},
		MaxGapMs: (max(cfg.Window, cfg.VoucherInterval) + cfg.VoucherGrace).Milliseconds(),
	})
	for _, f := range rep.Findings {
		findings = append(findings, Finding{Check: f.Check, OK: f.OK, Message: f.Message, Seq: f.Seq})
	}
	return findings, rep.OK(), nil
}

// leaseGPUHours is how long a lease's GPUs worked, in GPU-hours.
func leaseGPUHours(l *store.Lease) float64 {
	if l.WorkStartedMs == 0 {
		return 0
	}
	end := l.WorkFinishedMs
	if end == 0 {
		end = time.Now().UnixMilli()
	}
	return float64(len(l.GPUs)) * float64(max(0, end-l.WorkStartedMs)) / float64(time.Hour/time.Millisecond)
}
