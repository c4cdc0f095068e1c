package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// verifierDeps are what the completion verifier needs of the room.
type verifierDeps struct {
	log    *slog.Logger
	now    func() time.Time
	db     *store.DB
	leases *lease.Book
	jobs   *jobTracker
	terms  lease.Terms // Config.Attest
	call   jobCaller
	// download fetches a lease's output into the local cache and checks
	// that it hashes to the lease's output CID (fetcher.result).
	download func(ctx context.Context, jobID, leaseID string) error
	// leaseEnded tells trust a lease reached its outcome
	// (Reputation.LeaseEnded).
	leaseEnded func(l *store.Lease)
}

// completionVerifier decides the leases whose providers report them
// completed. The report is only a hint: a lease is recorded completed when
// the provider's signed chain holds the lease's start and finished events
// (job spec, exit 0, output CID) with telemetry covering the run
// (attest.VerifyCompletion), and the output downloaded hashes to that
// CID. Anything less records it unverified, with the reason: reputation
// counts that as a failure, and the payer, which pays only verified
// telemetry (or, for CPU work, only a verified end), pays no more.
type completionVerifier struct {
	verifierDeps
}

// Bounds of the chain read. The provider appends the finished event just
// after it records the lease's end, so a status can run a little ahead of
// the chain: it is read again until chainWait has passed.
const (
	chainWait = 20 * time.Second
	// maxLeaseEntries bounds the entries one lease's chain read may hold
	// (a day of 10-second windows is 8,640).
	maxLeaseEntries = 1 << 16
)

// reasonUnverified starts the reason of a lease recorded unverified.
const reasonUnverified = "completion not proven"

// verify records a lease its provider reported completed as completed or
// unverified, and returns the final lease.
func (v *completionVerifier) verify(ctx context.Context, l *store.Lease) *store.Lease {
	jobID := l.RenterJobID()
	fin, err := v.proveChain(ctx, l)
	if err == nil {
		err = v.download(ctx, jobID, l.ID)
		if err != nil {
			err = fmt.Errorf("the output could not be fetched and checked against the signed CID: %w", err)
		}
	}
	if ctx.Err() != nil {
		cur, _ := v.db.GetLease(l.ID)
		return cur
	}
	var fl *store.Lease
	if err != nil {
		reason := reasonUnverified + ": " + err.Error()
		fl, _, _ = v.leases.Finish(l.ID, lease.Unverified, reason, nil)
		v.jobs.event(jobID, "unverified", "lease %s on %s: %s", lease.Short(l.ID), lease.Short(l.Provider), reason)
		v.log.Warn("lease completion not proven", "lease", lease.Short(l.ID), "provider", l.Provider, "reason", err)
	} else {
		// The signed finished event's exit code, worded as the provider
		// words its own record, so both sides' leases read alike.
		fl, _, _ = v.leases.Finish(l.ID, lease.Completed, fmt.Sprintf("exited %d", fin.ExitCode), func(s *store.Lease) {
			s.Artifact, s.Run = fin.Artifact, fin.Run
		})
		v.jobs.event(jobID, "verified", "lease %s: the provider's signed chain records it finished with exit 0 and output %s%s; the downloaded output matches",
			lease.Short(l.ID), lease.Short(fin.Output), ranText(fin))
	}
	if fl != nil {
		v.leaseEnded(fl)
	}
	return fl
}

// proveChain reads the lease's chain from its provider until it proves
// the completion or chainWait has passed.
func (v *completionVerifier) proveChain(ctx context.Context, l *store.Lease) (*attest.JobEvent, error) {
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return nil, fmt.Errorf("bad provider ID: %w", err)
	}
	want := attest.Completion{Provider: l.Provider, Lease: l.ID, Renter: l.Renter, Job: l.JobCID, GPUs: l.GPUs, Output: l.OutputCID}
	if w, err := v.workloadOf(l.RenterJobID()); err == nil {
		want.Ran = w.RunWanted()
	}
	cfg := v.terms
	opts := attest.VerifyOptions{
		MaxSkewMs: cfg.MaxSkew.Milliseconds(), EnergyTolerancePct: uint32(cfg.EnergyTolerance * 100),
		MaxGapMs: (max(cfg.Window, cfg.VoucherInterval) + cfg.VoucherGrace).Milliseconds(),
	}
	deadline := v.now().Add(chainWait)
	backoff := 200 * time.Millisecond
	for {
		var fin *attest.JobEvent
		segment, err := v.readChain(ctx, p, l.ID)
		if err == nil {
			opts.NowMs = v.now().UnixMilli()
			if fin, err = attest.VerifyCompletion(segment, want, opts); err == nil {
				return fin, nil
			}
		}
		if ctx.Err() != nil || v.now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 3*time.Second)
	}
}

// readChain reads the lease's chain segment once (no follow).
func (v *completionVerifier) readChain(ctx context.Context, p peer.ID, leaseID string) ([][]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, fr, err := v.call(cctx, p, &jobproto.Request{Op: jobproto.OpAttest, Lease: leaseID})
	if err != nil {
		return nil, fmt.Errorf("read the lease's chain: %w", err)
	}
	defer fr.Close()
	var out [][]byte
	for {
		b, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the lease's chain: %w", err)
		}
		if len(out) == maxLeaseEntries {
			return nil, fmt.Errorf("the lease's chain has over %d entries", maxLeaseEntries)
		}
		out = append(out, append([]byte(nil), b...))
	}
}

// workloadOf is the workload of the renter's job jobID.
func (v *completionVerifier) workloadOf(jobID string) (*auction.Workload, error) {
	j, err := v.db.GetJob(jobID)
	if err != nil {
		return nil, err
	}
	spec, err := auction.ParseJobSpec(j.Spec)
	if err != nil {
		return nil, err
	}
	return spec.Workload()
}

// ranText words what a finished event records of the run, for the job's
// history: " (ran sha256:… on docker, 2000 millicores, 4096 MiB, network
// none)", or "" when the provider's release records nothing.
func ranText(j *attest.JobEvent) string {
	if j.Artifact == "" || j.Run == nil {
		return ", recording no artifact (the provider's release predates it)"
	}
	r := j.Run
	return fmt.Sprintf(", running %s on %s (%d millicores, %d MiB memory, %d MiB disk, network %s)",
		lease.Short(j.Artifact), r.Runtime, r.CPUMilli, r.MemoryMiB, r.DiskMiB, r.Network)
}
