package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/store"
)

// errPreempted is the cancellation cause of a preempted lease's work.
var errPreempted = errors.New("preempted")

// leaseRunner runs the provider's leases: it waits for a lease's start
// (after any preemption notice owed to a bronze lease on the same GPUs),
// marks its GPUs leased in the capacity record, runs the work, and records
// how it ended.
type leaseRunner struct {
	n    *Node
	work Work
	log  *slog.Logger
	now  func() time.Time
	// ended is called when a lease ends, whatever the outcome, after its
	// GPUs are released.
	ended func(l *store.Lease)

	mu      sync.Mutex
	ctx     context.Context
	cancels map[string]context.CancelCauseFunc
	wg      sync.WaitGroup
}

func newLeaseRunner(n *Node, work Work, ended func(*store.Lease)) *leaseRunner {
	return &leaseRunner{
		n: n, work: work, log: n.log.With("component", "leases"), now: time.Now, ended: ended,
		cancels: map[string]context.CancelCauseFunc{},
	}
}

// run resumes the leases a restart interrupted and keeps the runner's
// context until ctx ends.
func (r *leaseRunner) run(ctx context.Context) {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	leases, err := r.n.db.Leases()
	if err != nil {
		r.log.Warn("resume leases", "err", err)
	}
	for _, l := range leases {
		if l.Side != "provider" || terminalLease(l.State) {
			continue
		}
		if r.now().UnixMilli() >= l.EndsAtMs {
			r.finish(l, LeaseExpired, "ended while the provider was down")
			continue
		}
		r.log.Info("resuming lease after restart", "lease", l.ID, "state", l.State)
		r.start(l)
	}
	<-ctx.Done()
	r.wg.Wait()
}

// start schedules a countersigned lease.
func (r *leaseRunner) start(l *store.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil {
		return
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	r.cancels[l.ID] = cancel
	r.wg.Go(func() {
		defer cancel(nil)
		r.execute(ctx, l)
	})
}

// background runs fn on the runner's context (the node's lifetime).
func (r *leaseRunner) background(fn func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil {
		return
	}
	ctx := r.ctx
	r.wg.Go(func() { fn(ctx) })
}

// preempt takes a lease's GPUs back at at.
func (r *leaseRunner) preempt(id string, at time.Time) {
	r.mu.Lock()
	cancel := r.cancels[id]
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	time.AfterFunc(time.Until(at), func() { cancel(errPreempted) })
}

func (r *leaseRunner) execute(ctx context.Context, l *store.Lease) {
	defer func() {
		r.mu.Lock()
		delete(r.cancels, l.ID)
		r.mu.Unlock()
	}()
	if wait := time.Until(time.UnixMilli(l.StartsAtMs)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			r.finish(l, LeaseCancelled, "stopped before it started: "+cause(ctx))
			return
		case <-t.C:
		}
	}
	if err := r.leaseGPUs(ctx, l); err != nil {
		r.finish(l, LeaseFailed, err.Error())
		return
	}
	l.State, l.UpdatedAtMs = LeaseActive, r.now().UnixMilli()
	if err := r.n.db.PutLease(l); err != nil {
		r.log.Warn("store lease", "lease", l.ID, "err", err)
	}
	wctx, cancel := context.WithDeadline(ctx, time.UnixMilli(l.EndsAtMs))
	defer cancel()
	err := r.work.Run(wctx, l)
	switch {
	case err == nil:
		r.finish(l, LeaseCompleted, "work finished")
	case errors.Is(context.Cause(ctx), errPreempted):
		r.finish(l, LeasePreempted, "preempted for higher-tier work")
	case errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		r.finish(l, LeaseExpired, "reached its maximum duration")
	case ctx.Err() != nil:
		// The node is shutting down: leave the lease as it is so a
		// restart resumes it.
		r.releaseGPUs(l)
	default:
		r.finish(l, LeaseFailed, err.Error())
	}
}

// leaseGPUs marks the lease's GPUs leased in the capacity record. A GPU
// still held by a bronze lease whose notice ends right now is waited for.
func (r *leaseRunner) leaseGPUs(ctx context.Context, l *store.Lease) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, uuid := range l.GPUs {
		for {
			err := r.n.LeaseGPU(uuid, l.ID)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrGPULeased) || time.Now().After(deadline) {
				r.releaseGPUs(l)
				return fmt.Errorf("lease GPU %s: %w", uuid, err)
			}
			select {
			case <-ctx.Done():
				r.releaseGPUs(l)
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

func (r *leaseRunner) releaseGPUs(l *store.Lease) {
	for _, uuid := range l.GPUs {
		if cur := r.n.adv.leaseOf(uuid); cur == l.ID {
			_ = r.n.ReleaseGPU(uuid)
		}
	}
}

func (r *leaseRunner) finish(l *store.Lease, state, reason string) {
	r.releaseGPUs(l)
	l.State, l.Reason, l.UpdatedAtMs = state, reason, r.now().UnixMilli()
	if err := r.n.db.PutLease(l); err != nil {
		r.log.Warn("store lease", "lease", l.ID, "err", err)
	}
	r.log.Info("lease ended", "lease", l.ID, "state", state, "reason", reason)
	if r.ended != nil {
		r.ended(l)
	}
}

func cause(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}
