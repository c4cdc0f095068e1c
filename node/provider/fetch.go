package provider

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// How long a provider keeps trying to fetch a lease's module from a renter
// that does not answer before the lease fails. The spec, which takes the
// award up, gets auction.TakeUpPatience: until the renter serves it, the
// award holds GPUs for nothing.
const fetchPatience = time.Minute

// workload returns the lease's job, fetching the spec from the renter the
// first time and checking that it is the job the award named. A renter
// that does not serve the spec within auction.TakeUpPatience abandoned
// its award: the lease fails, its GPUs are free again, and the provider
// notes it (r.abandoned).
func (r *leaseRunner) workload(ctx context.Context, l *store.Lease) (*auction.Workload, error) {
	raw := l.Spec
	if raw == nil {
		renter, err := peer.Decode(l.Renter)
		if err != nil {
			return nil, err
		}
		var h *jobproto.Header
		// A renter that holds the stream open without answering gets no
		// more than the patience either.
		sctx, cancel := context.WithTimeout(ctx, auction.TakeUpPatience)
		defer cancel()
		err = r.retry(sctx, "fetch the job spec", auction.TakeUpPatience, func(ctx context.Context) error {
			hdr, fr, err := lease.Call(ctx, r.p2p, renter, &jobproto.Request{Op: jobproto.OpSpec, Lease: l.ID})
			if err != nil {
				return err
			}
			_ = fr.Close()
			h = hdr
			return nil
		})
		if err != nil {
			if ctx.Err() == nil && r.abandoned != nil {
				r.abandoned(l)
			}
			return nil, fmt.Errorf("the renter did not send the job's spec (award abandoned): %w", err)
		}
		raw = h.Spec
		if r.tookUp != nil {
			r.tookUp(l.ID)
		}
	}
	spec, err := auction.ParseJobSpec(raw)
	if err != nil {
		return nil, fmt.Errorf("job spec from the renter: %w", err)
	}
	c, err := spec.CID()
	if err != nil {
		return nil, fmt.Errorf("job spec from the renter: %w", err)
	}
	if c.String() != l.JobCID {
		return nil, fmt.Errorf("the renter sent the spec of job %s, but the lease is for %s", c, l.JobCID)
	}
	w, err := spec.Workload()
	if err != nil {
		return nil, err
	}
	if l.Runtime != "" && w.Runtime != l.Runtime {
		return nil, fmt.Errorf("spec runtime %q differs from the RFQ's %q", w.Runtime, l.Runtime)
	}
	if l.Spec == nil {
		if _, err := r.setState(l.ID, lease.Preparing, func(s *store.Lease) { s.Spec, s.Runtime = raw, w.Runtime }); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// fetchModule copies a WASM module from the renter into the artifact
// store, verified against its CID, unless it is already there.
func (r *leaseRunner) fetchModule(ctx context.Context, l *store.Lease, id string) error {
	if r.ex.artifacts.Has(id) {
		return nil
	}
	renter, err := peer.Decode(l.Renter)
	if err != nil {
		return err
	}
	return r.retry(ctx, "fetch module "+id, fetchPatience, func(ctx context.Context) error {
		_, fr, err := lease.Call(ctx, r.p2p, renter, &jobproto.Request{Op: jobproto.OpArtifact, Lease: l.ID, CID: id})
		if err != nil {
			return err
		}
		defer fr.Close()
		pr, pw := io.Pipe()
		go func() { _, err := lease.CopyFrames(pw, fr); pw.CloseWithError(err) }()
		got, err := r.ex.artifacts.Put(pr, lease.MaxModuleBytes)
		_ = pr.CloseWithError(err)
		if err != nil {
			return err
		}
		if got != id {
			return lease.Permanent(fmt.Errorf("the renter sent module %s for %s", got, id))
		}
		return nil
	})
}

// retry runs fn until it succeeds, fails permanently (a refusal from the
// peer, a permanent error) or patience runs out.
func (r *leaseRunner) retry(ctx context.Context, what string, patience time.Duration, fn func(ctx context.Context) error) error {
	deadline := r.now().Add(patience)
	backoff := 200 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if lease.Final(err) || ctx.Err() != nil || r.now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		r.log.Debug("retrying", "what", what, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(backoff, max(0, deadline.Sub(r.now())))):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
