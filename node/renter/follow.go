package renter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// inflightAward is an award sent and not yet countersigned: its provider
// may already ask for the spec before the renter stored the lease.
type inflightAward struct {
	provider string
	jobID    string // the renter's job
}

// serveJob answers a provider preparing one of this renter's leases: the
// job spec, and the artifacts (WASM modules) the job names. Only the
// lease's provider is served, and only what its job names.
func (a *Renter) serveJob(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	jobID, ok := a.leaseJob(req.Lease, from)
	if !ok {
		return lease.Refuse(send, jobproto.CodeNotFound, "no lease %s with provider %s", req.Lease, from)
	}
	j, err := a.db.GetJob(jobID)
	if err != nil {
		return lease.Refuse(send, jobproto.CodeNotFound, "job %s: %v", jobID, err)
	}
	switch req.Op {
	case jobproto.OpSpec:
		return lease.SendHeader(send, &jobproto.Header{Spec: j.Spec})
	case jobproto.OpArtifact:
		spec, err := auction.ParseJobSpec(j.Spec)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInternal, "stored spec: %v", err)
		}
		if spec.Module != req.CID {
			return lease.Refuse(send, jobproto.CodeForbidden, "job %s does not name artifact %s", jobID, req.CID)
		}
		rc, err := a.artifacts.Get(ctx, req.CID)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeNotFound, "artifact %s: %v (add it with `idlegrid artifact add`)", req.CID, err)
		}
		defer rc.Close()
		if err := lease.SendHeader(send, &jobproto.Header{CID: req.CID}); err != nil {
			return err
		}
		return lease.SendData(ctx, send, rc)
	}
	return lease.Refuse(send, jobproto.CodeInvalid, "op %q is not served by a renter", req.Op)
}

// leaseJob returns the job of a lease held with provider p, whether the
// lease is stored or its award is still in flight. In-flight awards are
// looked at first: an award leaves them only after its lease is stored,
// so the other order could miss both.
func (a *Renter) leaseJob(leaseID string, p peer.ID) (string, bool) {
	a.mu.Lock()
	in, ok := a.inflight[leaseID]
	a.mu.Unlock()
	if ok {
		return in.jobID, in.provider == p.String()
	}
	if l, err := a.db.GetLease(leaseID); err == nil {
		return l.RenterJobID(), l.Side == lease.SideRenter && l.Provider == p.String()
	}
	return "", false
}

// statusWait is how long one status long-poll waits on the provider. The
// polls are the lease's heartbeat: a provider that answers none for
// market.provider_timeout is given up on, so a poll must end well within
// that timeout even when the provider died mid-poll without closing the
// connection (kill -9 over QUIC, a host losing power): each call is cut
// off statusSlack after its wait.
const (
	statusWait  = 5 * time.Second
	statusSlack = 3 * time.Second
)

// maxFollowBackoff bounds the pause between status calls to a silent
// provider: short next to the provider timeout, so the timeout is what
// decides, and at most 15 s when there is none.
func (a *Renter) maxFollowBackoff() time.Duration {
	if t := a.cfg.ProviderTimeout; t > 0 {
		return min(15*time.Second, max(t/5, 500*time.Millisecond))
	}
	return 15 * time.Second
}

// unreachableGrace is how long past a lease's end a renter keeps trying to
// reach a silent provider before it records the lease failed.
const unreachableGrace = 2 * time.Minute

// reasonUnreachable starts the reason of a lease failed because its
// provider stopped answering (reputation counts it as unreachable).
const reasonUnreachable = "provider unreachable"

// followLease mirrors a lease's state from its provider (long-polling
// status) until the lease ends, and returns the final lease. Progress is
// recorded on the lease and in the job's history.
func (a *Renter) followLease(ctx context.Context, l *store.Lease) *store.Lease {
	provider, err := peer.Decode(l.Provider)
	if err != nil {
		fl, _, _ := a.leases.Finish(l.ID, lease.Failed, "bad provider ID", nil)
		return fl
	}
	var seen uint64
	backoff := 500 * time.Millisecond
	var lastErr error
	lastHeard := a.now()
	for ctx.Err() == nil {
		// A silent provider is probed without a wait: the first answer
		// ends the silence.
		wait := statusWait
		if lastErr != nil {
			wait = 0
		}
		cctx, cancel := context.WithTimeout(ctx, wait+statusSlack)
		h, fr, err := a.jobCall(cctx, provider, &jobproto.Request{Op: jobproto.OpStatus, Lease: l.ID, After: seen, WaitMs: uint32(wait / time.Millisecond)})
		if err == nil {
			_ = fr.Close()
			if h.Status == nil {
				err = errors.New("status response without a status")
			}
		}
		cancel()
		if err != nil {
			var re *jobproto.RemoteError
			if errors.As(err, &re) && re.Code == jobproto.CodeNotFound {
				fl, _, _ := a.leases.Finish(l.ID, lease.Failed, "the provider does not know the lease: "+re.Message, nil)
				return fl
			}
			if lastErr == nil {
				a.log.Info("provider not answering status; retrying", "lease", lease.Short(l.ID), "err", err)
			}
			lastErr = err
			if a.now().After(time.UnixMilli(l.EndsAtMs).Add(unreachableGrace)) {
				fl, _, _ := a.leases.Finish(l.ID, lease.Failed, fmt.Sprintf("provider unreachable past the lease's end: %v", err), nil)
				return fl
			}
			if silent := a.now().Sub(lastHeard); a.cfg.ProviderTimeout > 0 && silent > a.cfg.ProviderTimeout {
				// A dead provider is given up on now, not at the lease's
				// end: the work can be re-auctioned (watchCompletion).
				fl, _, _ := a.leases.Finish(l.ID, lease.Failed, fmt.Sprintf("%s for %s: %v", reasonUnreachable, silent.Round(time.Second), err), nil)
				return fl
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, a.maxFollowBackoff())
			continue
		}
		lastErr, backoff, lastHeard = nil, 500*time.Millisecond, a.now()
		st := h.Status
		if st.Version <= seen {
			continue
		}
		seen = st.Version
		cur, changed := a.mirror(l.ID, st)
		if changed {
			a.leaseEvent(cur, st)
		}
		if lease.State(st.State).Terminal() {
			a.rep.Invalidate()
			return cur
		}
	}
	cur, _ := a.db.GetLease(l.ID)
	return cur
}

// mirror copies the provider's view of a lease into the renter's copy.
func (a *Renter) mirror(id string, st *jobproto.Status) (*store.Lease, bool) {
	changed := false
	cur, err := a.leases.Update(id, func(l *store.Lease) bool {
		if lease.State(l.State).Terminal() {
			return false
		}
		changed = l.State != st.State
		if lease.State(st.State).Valid() {
			l.State = st.State
		}
		l.Reason, l.ExitCode = st.Reason, st.ExitCode
		l.WorkStartedMs, l.WorkFinishedMs = st.StartedMs, st.FinishedMs
		l.OutputCID, l.OutputSize, l.LogBytes = st.OutputCID, st.OutputSize, st.LogBytes
		l.Health = st.Health
		return true
	})
	if err != nil {
		a.log.Warn("store lease", "lease", lease.Short(id), "err", err)
		return &store.Lease{ID: id, State: st.State, Reason: st.Reason}, false
	}
	return cur, changed
}

// leaseEvent records a lease's new state in its job's history.
func (a *Renter) leaseEvent(l *store.Lease, st *jobproto.Status) {
	msg := fmt.Sprintf("lease %s on %s: %s", lease.Short(l.ID), lease.Short(l.Provider), st.State)
	if st.Reason != "" {
		msg += " (" + st.Reason + ")"
	}
	if st.OutputCID != "" {
		msg += fmt.Sprintf("; output %s (a %d-byte tar)", st.OutputCID, st.OutputSize)
	}
	a.jobs.event(l.RenterJobID(), "lease-"+st.State, "%s", msg)
}

// cancelLease asks a lease's provider to stop its work and records the
// lease cancelled whatever the answer (the renter stops paying either way).
func (a *Renter) cancelLease(ctx context.Context, l *store.Lease, reason string) {
	if lease.State(l.State).Terminal() {
		return
	}
	if p, err := peer.Decode(l.Provider); err == nil {
		cctx, cancel := context.WithTimeout(ctx, a.cfg.CancelWait+35*time.Second)
		h, fr, err := a.jobCall(cctx, p, &jobproto.Request{Op: jobproto.OpCancel, Lease: l.ID})
		cancel()
		if err == nil {
			_ = fr.Close()
			if h.Status != nil {
				a.mirror(l.ID, h.Status)
			}
		} else {
			a.log.Warn("cancel not delivered to the provider", "lease", lease.Short(l.ID), "err", err)
		}
	}
	a.finishLease(l.ID, lease.Cancelled, reason)
}
