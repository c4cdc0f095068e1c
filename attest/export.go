package attest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Export is the file `idlegrid attest export LEASE` writes and
// `idlegrid attest verify FILE` checks: a lease's stretch of its
// provider's signed chain, self-contained (the envelopes carry their
// signatures), plus what the lease promised.
type Export struct {
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

// MaxExportBytes bounds an export file read back for verification.
const MaxExportBytes = 256 << 20

// ExportCheck is what a verifier of an export accepts.
type ExportCheck struct {
	// MaxSkew is the accepted clock difference in attestation times.
	MaxSkew time.Duration
	// EnergyTolerance is the accepted relative gap between reported
	// energy and average power x time.
	EnergyTolerance float64
	// MaxGap is the longest stretch without telemetry a lease may have.
	MaxGap time.Duration
}

// ExportFinding is one verifier check's result, as `attest verify`
// reports it.
type ExportFinding struct {
	Check   string `json:"check"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
}

// VerifyExport checks an export file on its own, with no network:
// signatures and domains, chain continuity, time, fingerprint, value
// ranges, energy against power x time, health and the lease's coverage.
// It returns every check's findings; ok is false when any failed.
func VerifyExport(data []byte, opts ExportCheck, now time.Time) (findings []ExportFinding, ok bool, err error) {
	if len(data) > MaxExportBytes {
		return nil, false, fmt.Errorf("verify export: file of %d bytes over %d", len(data), MaxExportBytes)
	}
	var x Export
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, false, fmt.Errorf("verify export: not an idlegrid attestation export: %w", err)
	}
	if x.Version != 1 || x.Provider == "" || x.Lease.ID == "" {
		return nil, false, errors.New("verify export: not an idlegrid attestation export (version, provider or lease missing)")
	}
	rep := Verify(x.Entries, VerifyOptions{
		Provider: x.Provider, NowMs: now.UnixMilli(), MaxSkewMs: opts.MaxSkew.Milliseconds(),
		Fingerprints: x.Fingerprints, EnergyTolerancePct: uint32(opts.EnergyTolerance * 100),
		Lease:    &LeaseScope{ID: x.Lease.ID, Renter: x.Lease.Renter, StartMs: x.Lease.StartMs, EndMs: x.Lease.EndMs, GPUs: x.Lease.GPUs},
		MaxGapMs: opts.MaxGap.Milliseconds(),
	})
	for _, f := range rep.Findings {
		findings = append(findings, ExportFinding{Check: f.Check, OK: f.OK, Message: f.Message, Seq: f.Seq})
	}
	return findings, rep.OK(), nil
}
