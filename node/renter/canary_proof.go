package renter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/store"
)

// wrongResultProver turns a canary's disagreement on a deterministic
// WASM job into a wrong-result proof (attest.WrongResultProof): both
// providers' signed finished events, the spec, the module and the re-run
// bounds. Trust re-runs the job (judge) to learn which output is wrong;
// a proof that holds is applied here (report) and gossiped (publish).
type wrongResultProver struct {
	log       *slog.Logger
	now       func() time.Time
	key       crypto.PrivKey
	self      peer.ID
	artifacts executor.Artifacts
	// readChain reads a lease's chain segment from its provider
	// (completionVerifier.readChain).
	readChain func(ctx context.Context, p peer.ID, leaseID string) ([][]byte, error)
	judge     func(ctx context.Context, proof []byte) (peer.ID, error)
	report    func(proof []byte)
	publish   func(ctx context.Context, proof []byte) error
}

// prove builds, judges and publishes the proof for two leases of one
// deterministic job spec that finished with different outputs. It returns
// the provider proven wrong.
func (w *wrongResultProver) prove(ctx context.Context, origin *store.Job, a, b *store.Lease) (string, error) {
	if w == nil || w.judge == nil {
		return "", errors.New("this renter does not judge wrong results")
	}
	spec, err := auction.ParseJobSpec(origin.Spec)
	if err != nil {
		return "", err
	}
	wl, err := spec.Workload()
	if err != nil {
		return "", err
	}
	module, err := executor.ReadArtifact(ctx, w.artifacts, wl.Module, attest.MaxProofModuleSize)
	if err != nil {
		return "", fmt.Errorf("the module does not fit a proof (at most %d bytes) or is not held here: %w", attest.MaxProofModuleSize, err)
	}
	claimA, err := w.finishedEntry(ctx, a)
	if err != nil {
		return "", err
	}
	claimB, err := w.finishedEntry(ctx, b)
	if err != nil {
		return "", err
	}
	proof := &attest.WrongResultProof{
		V: attest.RecordsVersion, Reporter: w.self.String(), Spec: origin.Spec, Module: module,
		Bounds: replayBounds(wl), AtMs: w.now().UnixMilli(),
	}
	// Which output is wrong takes a re-run: accuse a first; if the re-run
	// gives a's output, b is the one (the re-run is remembered by
	// content, so the second judgement costs nothing).
	for _, claims := range [][2][]byte{{claimA, claimB}, {claimB, claimA}} {
		e, _ := attest.OpenEntry(claims[0])
		proof.Offender, proof.Claims = e.Provider, [][]byte{claims[0], claims[1]}
		raw, err := attest.SealWrongResult(proof, w.key, w.now())
		if err != nil {
			return "", err
		}
		offender, err := w.judge(ctx, raw)
		if errors.Is(err, attest.ErrFalseProof) {
			continue
		}
		if err != nil {
			return "", err
		}
		w.log.Warn("provider returned a wrong result: proven by re-run, fraud proof published", "provider", offender, "job", origin.ID)
		w.report(raw)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := w.publish(pctx, raw); err != nil {
			w.log.Warn("publish fraud proof", "err", err)
		}
		cancel()
		return offender.String(), nil
	}
	return "", fmt.Errorf("%w: the re-run agrees with neither provider", attest.ErrUnprovable)
}

// finishedEntry reads the raw finished event of lease l from its
// provider's chain.
func (w *wrongResultProver) finishedEntry(ctx context.Context, l *store.Lease) ([]byte, error) {
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return nil, err
	}
	segment, err := w.readChain(ctx, p, l.ID)
	if err != nil {
		return nil, err
	}
	for _, raw := range segment {
		e, err := attest.OpenEntry(raw)
		if err == nil && e.Provider == l.Provider && e.Job != nil && e.Job.Lease == l.ID && e.Job.Event == attest.JobFinished {
			return raw, nil
		}
	}
	return nil, fmt.Errorf("provider %s's chain holds no finished event for lease %s", l.Provider, l.ID)
}

// replayBounds are the proof's re-run limits: the spec's own, capped at
// what a verifier spends (attest.MaxReplay*).
func replayBounds(w *auction.Workload) attest.ReplayBounds {
	b := attest.ReplayBounds{TimeMs: attest.MaxReplayTimeMs, MemoryMiB: attest.MaxReplayMemoryMiB, OutputMiB: attest.MaxReplayOutputMiB}
	if d := int64(w.MaxDurationSec) * 1000; d > 0 {
		b.TimeMs = min(b.TimeMs, d)
	}
	if m := int64(w.Resources.RAMMiB); m > 0 {
		b.MemoryMiB = min(b.MemoryMiB, m)
	}
	if g := int64(w.Resources.DiskGiB) << 10; g > 0 {
		b.OutputMiB = min(b.OutputMiB, g)
	}
	return b
}
