package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/failpoint"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Causes of a lease's work being stopped before it finished.
var (
	errPreempted = errors.New("preempted")
	errCancelled = errors.New("cancelled by the renter")
)

// leaseRunner runs the provider's leases: it waits for a lease's start
// (after any preemption notice owed to a bronze lease on the same GPUs),
// marks its GPUs leased in the capacity record, runs the work in its
// executor (exec.go), and records how it ended.
type leaseRunner struct {
	runnerDeps

	mu      sync.Mutex
	ctx     context.Context
	cancels map[string]context.CancelCauseFunc
	// graceUntil is when a preempted lease's workload is killed: the end
	// of the notice promised in its bid.
	graceUntil map[string]time.Time
	wg         sync.WaitGroup
}

// runnerDeps are the lease runner's collaborators.
type runnerDeps struct {
	log  *slog.Logger
	now  func() time.Time
	db   *store.DB
	book *lease.Book
	// p2p calls the renter's job protocol (spec and module fetches).
	p2p  *p2p.Node
	ex   *executors
	cfg  ExecutorConfig
	gpus gpu.Backend
	// egress is provider.egress: work that asks may reach the network.
	egress bool
	// leaseGPU, releaseGPU and gpuLease mark GPUs in the capacity record
	// (the advertiser).
	leaseGPU   func(uuid, leaseID string) error
	releaseGPU func(uuid string) error
	gpuLease   func(uuid string) string
	// jobEvent records a lease's start or end in the attestation chain
	// and returns the entry's sequence number.
	jobEvent func(l *store.Lease, kind attest.JobEventKind) uint64
	// services are the running service leases (the tunnel's targets).
	services *serviceBook
	// watchPay stops a running lease through stop when its renter stops
	// paying, until ctx ends; issueReceipt seals an ended lease's receipt
	// in the background (the cashier).
	watchPay     func(ctx context.Context, leaseID string, stop func())
	issueReceipt func(l *store.Lease)
	// ended is called when a lease ends, whatever the outcome, after its
	// GPUs are released.
	ended func(l *store.Lease)
	// tookUp is called when the renter served a lease's spec, abandoned
	// when it did not within auction.TakeUpPatience (before the lease
	// fails).
	tookUp    func(leaseID string)
	abandoned func(l *store.Lease)
}

func newLeaseRunner(d runnerDeps) *leaseRunner {
	return &leaseRunner{runnerDeps: d, cancels: map[string]context.CancelCauseFunc{}, graceUntil: map[string]time.Time{}}
}

// run reconciles workloads with the stored leases, resumes the leases a
// restart interrupted and keeps the runner's context until ctx ends.
func (r *leaseRunner) run(ctx context.Context) {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	r.resume(ctx)
	r.wg.Go(func() { r.pruneLoop(ctx) })
	<-ctx.Done()
	r.wg.Wait()
}

// resume picks up where a restart left the provider's leases. Workloads
// that outlive the daemon (containers) are reattached; a lease whose
// workload is gone is recorded failed with the reason, and workloads no
// lease tracks are removed, so nothing is left orphaned.
func (r *leaseRunner) resume(ctx context.Context) {
	leases, err := r.db.Leases()
	if err != nil {
		r.log.Warn("resume leases", "err", err)
	}
	tracked := map[string][]executor.Handle{}
	for _, l := range leases {
		if l.Side == lease.SideProvider && !lease.State(l.State).Terminal() && l.Handle != "" {
			tracked[l.Runtime] = append(tracked[l.Runtime], executor.Handle(l.Handle))
		}
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	missing := r.ex.reconcile(rctx, tracked)
	cancel()
	for _, l := range leases {
		if l.Side == lease.SideProvider && lease.State(l.State).Terminal() && receiptDue(l, r.now()) {
			// A crash between a lease's end (or a late voucher) and its
			// receipt left it unreceipted; issueReceipt does nothing when
			// the receipt already covers the last voucher.
			r.issueReceipt(l)
		}
		if l.Side != lease.SideProvider || lease.State(l.State).Terminal() {
			continue
		}
		switch {
		case l.Handle != "" && missing[executor.Handle(l.Handle)]:
			r.finish(l.ID, lease.Failed, fmt.Sprintf("the %s workload did not survive a provider restart", l.Runtime), nil)
			continue
		case l.Handle == "" && r.now().UnixMilli() >= l.EndsAtMs:
			r.finish(l.ID, lease.Expired, "its time ran out while the provider was down", nil)
			continue
		}
		if l.Handle != "" {
			r.log.Info("reattached to lease workload after restart", "lease", lease.Short(l.ID), "handle", l.Handle)
		} else {
			r.log.Info("resuming lease after restart", "lease", lease.Short(l.ID), "state", l.State)
		}
		r.start(l)
	}
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
		r.execute(ctx, l.ID)
	})
}

// preempt tells a lease's workload to stop now (SIGTERM, for a workload
// that checkpoints) and kills it at at, the end of the promised notice.
func (r *leaseRunner) preempt(id string, at time.Time) {
	r.stop(id, errPreempted, at)
}

// cancel stops a lease's workload at the renter's request, with the
// configured grace.
func (r *leaseRunner) cancel(id string) bool {
	return r.stop(id, errCancelled, r.now().Add(r.cfg.StopGrace))
}

// cancelLease stops a lease's work with the configured grace and waits
// (bounded) until its end is recorded.
func (r *leaseRunner) cancelLease(ctx context.Context, l *store.Lease) (*store.Lease, error) {
	if lease.State(l.State).Terminal() {
		return l, nil
	}
	if !r.cancel(l.ID) {
		// Not running in this process (the runner has not picked it up):
		// nothing to stop.
		r.finish(l.ID, lease.Cancelled, "cancelled by the renter before it started", nil)
		return r.db.GetLease(l.ID)
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.StopGrace+30*time.Second)
	defer cancel()
	for {
		cur, err := r.book.Wait(wctx, l.ID, l.Version)
		if err != nil || lease.State(cur.State).Terminal() || wctx.Err() != nil {
			return cur, err
		}
		l = cur
	}
}

func (r *leaseRunner) stop(id string, cause error, killAt time.Time) bool {
	r.mu.Lock()
	cancel := r.cancels[id]
	if cancel != nil {
		if prev, ok := r.graceUntil[id]; !ok || killAt.Before(prev) {
			r.graceUntil[id] = killAt
		}
	}
	r.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(cause)
	return true
}

// grace is how long a stopped lease's workload may take to exit.
func (r *leaseRunner) grace(id string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.graceUntil[id]; ok {
		return max(0, until.Sub(r.now()))
	}
	return r.cfg.StopGrace
}

func (r *leaseRunner) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cancels, id)
	delete(r.graceUntil, id)
}

// waitStart waits for a lease's start time. It returns false when the
// lease was stopped before it started.
func (r *leaseRunner) waitStart(ctx context.Context, l *store.Lease) bool {
	wait := time.UnixMilli(l.StartsAtMs).Sub(r.now())
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// leaseGPUs marks the lease's GPUs leased in the capacity record. A GPU
// still held by a bronze lease whose notice ends right now is waited for.
func (r *leaseRunner) leaseGPUs(ctx context.Context, l *store.Lease) error {
	deadline := r.now().Add(30 * time.Second)
	for _, uuid := range l.GPUs {
		for {
			err := r.leaseGPU(uuid, l.ID)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrGPULeased) || r.now().After(deadline) {
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
		if cur := r.gpuLease(uuid); cur == l.ID {
			_ = r.releaseGPU(uuid)
		}
	}
}

// setState records a non-terminal state change.
func (r *leaseRunner) setState(id, state string, more func(l *store.Lease)) (*store.Lease, error) {
	return r.book.Update(id, func(l *store.Lease) bool {
		if lease.State(l.State).Terminal() {
			return false
		}
		l.State = state
		if more != nil {
			more(l)
		}
		return true
	})
}

// finish records how a lease ended and frees its GPUs.
func (r *leaseRunner) finish(id, state, reason string, more func(l *store.Lease)) {
	l, done, err := r.book.Finish(id, state, reason, more)
	if err != nil {
		r.log.Warn("store lease", "lease", lease.Short(id), "err", err)
		return
	}
	if done && l.WorkStartedMs != 0 {
		r.simulateLoad(l, false)
	}
	if done && l.ChainSeq != 0 {
		// The chain records the end before the GPUs are free again: a GPU
		// must never appear to serve two leases at once.
		last := r.jobEvent(l, endEvent(state))
		if cur, err := r.book.Update(id, func(l *store.Lease) bool { l.ChainLast = last; return true }); err == nil {
			l = cur
		}
	}
	r.releaseGPUs(l)
	if !done {
		return
	}
	failpoint.Hit(failpoint.ProviderLeaseEnded)
	r.issueReceipt(l)
	r.log.Info("lease ended", "lease", lease.Short(id), "state", state, "reason", reason)
	if r.ended != nil {
		r.ended(l)
	}
}

// endEvent is the chain's job event for a lease's final state.
func endEvent(state string) attest.JobEventKind {
	switch state {
	case lease.Completed:
		return attest.JobFinished
	case lease.Preempted:
		return attest.JobPreempted
	case lease.Cancelled:
		return attest.JobCancelled
	}
	return attest.JobFailed
}

// pruneLoop removes kept results past executor.keep_results.
func (r *leaseRunner) pruneLoop(ctx context.Context) {
	t := time.NewTicker(min(r.cfg.KeepResults/4, time.Hour))
	defer t.Stop()
	for {
		r.ex.pruneResults(r.cfg.KeepResults, r.now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
