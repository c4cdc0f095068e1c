package renter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// followerDeps are what the follower needs of the room.
type followerDeps struct {
	log    *slog.Logger
	now    func() time.Time
	db     *store.DB
	leases *lease.Book
	jobs   *jobTracker
	call   jobCaller
	// leaseEnded tells trust a lease reached its outcome
	// (Reputation.LeaseEnded).
	leaseEnded func(l *store.Lease)
	// background starts work on the room's context (background.Go).
	background func(fn func(ctx context.Context)) error
	// verify decides a lease its provider reports completed
	// (completionVerifier.verify) and returns the final lease.
	verify func(ctx context.Context, l *store.Lease) *store.Lease
}

// follower mirrors the renter's leases from their providers (long-polling
// status), gives up on providers that stay silent, and cancels and
// finishes leases.
type follower struct {
	followerDeps
	providerTimeout time.Duration // Config.ProviderTimeout
	cancelWait      time.Duration // Config.CancelWait
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
func (f *follower) maxFollowBackoff() time.Duration {
	if t := f.providerTimeout; t > 0 {
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
func (f *follower) followLease(ctx context.Context, l *store.Lease) *store.Lease {
	provider, err := peer.Decode(l.Provider)
	if err != nil {
		return f.finish(l.ID, lease.Failed, "bad provider ID")
	}
	var seen uint64
	backoff := 500 * time.Millisecond
	var lastErr error
	lastHeard := f.now()
	for ctx.Err() == nil {
		// A silent provider is probed without a wait: the first answer
		// ends the silence.
		wait := statusWait
		if lastErr != nil {
			wait = 0
		}
		cctx, cancel := context.WithTimeout(ctx, wait+statusSlack)
		h, fr, err := f.call(cctx, provider, &jobproto.Request{Op: jobproto.OpStatus, Lease: l.ID, After: seen, WaitMs: uint32(wait / time.Millisecond)})
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
				return f.finish(l.ID, lease.Failed, "the provider does not know the lease: "+re.Message)
			}
			if lastErr == nil {
				f.log.Info("provider not answering status; retrying", "lease", lease.Short(l.ID), "err", err)
			}
			lastErr = err
			if f.now().After(time.UnixMilli(l.EndsAtMs).Add(unreachableGrace)) {
				return f.finish(l.ID, lease.Failed, fmt.Sprintf("provider unreachable past the lease's end: %v", err))
			}
			if silent := f.now().Sub(lastHeard); f.providerTimeout > 0 && silent > f.providerTimeout {
				// A dead provider is given up on now, not at the lease's
				// end: the work can be re-auctioned (watchCompletion).
				return f.finish(l.ID, lease.Failed, fmt.Sprintf("%s for %s: %v", reasonUnreachable, silent.Round(time.Second), err))
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, f.maxFollowBackoff())
			continue
		}
		lastErr, backoff, lastHeard = nil, 500*time.Millisecond, f.now()
		st := h.Status
		if st.Version <= seen {
			continue
		}
		seen = st.Version
		cur, changed := f.mirror(l.ID, st)
		if changed {
			f.leaseEvent(cur, st)
		}
		if st.State == lease.Completed && !lease.State(cur.State).Terminal() {
			// The provider's word is a hint: its chain and the output
			// decide.
			return f.verify(ctx, cur)
		}
		if lease.State(st.State).Terminal() {
			f.leaseEnded(cur)
			return cur
		}
	}
	cur, _ := f.db.GetLease(l.ID)
	return cur
}

// mirror copies the provider's view of a lease into the renter's copy.
// A reported completion is not copied as the lease's state: only the
// completion verifier records a lease completed.
func (f *follower) mirror(id string, st *jobproto.Status) (*store.Lease, bool) {
	changed := false
	cur, err := f.leases.Update(id, func(l *store.Lease) bool {
		if lease.State(l.State).Terminal() {
			return false
		}
		changed = l.State != st.State
		if lease.State(st.State).Valid() && st.State != lease.Completed {
			l.State = st.State
		}
		l.Reason, l.ExitCode = st.Reason, st.ExitCode
		l.WorkStartedMs, l.WorkFinishedMs = st.StartedMs, st.FinishedMs
		l.OutputCID, l.OutputSize, l.LogBytes = st.OutputCID, st.OutputSize, st.LogBytes
		l.Health = st.Health
		return true
	})
	if err != nil {
		f.log.Warn("store lease", "lease", lease.Short(id), "err", err)
		return &store.Lease{ID: id, State: st.State, Reason: st.Reason}, false
	}
	return cur, changed
}

// leaseEvent records a lease's new state in its job's history.
func (f *follower) leaseEvent(l *store.Lease, st *jobproto.Status) {
	msg := fmt.Sprintf("lease %s on %s: %s", lease.Short(l.ID), lease.Short(l.Provider), st.State)
	kind := "lease-" + st.State
	if st.State == lease.Completed {
		msg = fmt.Sprintf("lease %s on %s: the provider reports it completed", lease.Short(l.ID), lease.Short(l.Provider))
		kind = "lease-reported-completed"
	}
	if st.Reason != "" {
		msg += " (" + st.Reason + ")"
	}
	if st.OutputCID != "" {
		msg += fmt.Sprintf("; output %s (a %d-byte tar)", st.OutputCID, st.OutputSize)
	}
	if st.State == lease.Completed {
		msg += "; checking its signed chain and the output"
	}
	f.jobs.event(l.RenterJobID(), kind, "%s", msg)
}

// cancelLease asks a lease's provider to stop its work and records the
// lease cancelled whatever the answer (the renter stops paying either way).
func (f *follower) cancelLease(ctx context.Context, l *store.Lease, reason string) {
	if lease.State(l.State).Terminal() {
		return
	}
	if p, err := peer.Decode(l.Provider); err == nil {
		cctx, cancel := context.WithTimeout(ctx, f.cancelWait+35*time.Second)
		h, fr, err := f.call(cctx, p, &jobproto.Request{Op: jobproto.OpCancel, Lease: l.ID})
		cancel()
		if err == nil {
			_ = fr.Close()
			if h.Status != nil {
				f.mirror(l.ID, h.Status)
			}
		} else {
			f.log.Warn("cancel not delivered to the provider", "lease", lease.Short(l.ID), "err", err)
		}
	}
	f.finishLease(l.ID, lease.Cancelled, reason)
}

// finishLease records a lease's final state (idempotent: a terminal lease
// keeps its first outcome).
func (f *follower) finishLease(id, state, reason string) { f.finish(id, state, reason) }

// finish is finishLease returning the final lease, nil if it could not be
// stored. Trust hears of the outcome, so an award does not offer a
// provider that just failed its lease as if it had not.
func (f *follower) finish(id, state, reason string) *store.Lease {
	l, _, err := f.leases.Finish(id, state, reason, nil)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			f.log.Warn("store lease", "lease", id, "err", err)
		}
		return nil
	}
	f.leaseEnded(l)
	return l
}

// failUnhealthy records the lease failed as unhealthy and stops its work
// on the provider; the job driver re-auctions it.
func (f *follower) failUnhealthy(l *store.Lease) {
	f.finish(l.ID, lease.Failed, reasonUnhealthy+": its health check kept failing")
	f.jobs.event(l.RenterJobID(), "unhealthy", "lease %s: service unhealthy; re-auctioning the job", lease.Short(l.ID))
	_ = f.background(func(ctx context.Context) { f.cancelLease(ctx, l, reasonUnhealthy) })
}
