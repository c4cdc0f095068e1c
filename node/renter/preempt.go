package renter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// preemptDeps are what the preemption notices need of the room.
type preemptDeps struct {
	log    *slog.Logger
	now    func() time.Time
	db     *store.DB
	leases *lease.Book
	jobs   *jobTracker
	// background starts work on the room's context (background.Go).
	background func(fn func(ctx context.Context)) error
	// finish records a lease's final state (follower.finishLease).
	finish func(id, state, reason string)
}

// preemptions take providers' preemption notices: each lease keeps
// running until its notice's effective time, is then recorded preempted,
// and its ID is delivered to its job's driver, which re-auctions the work.
type preemptions struct {
	preemptDeps

	mu    sync.Mutex
	byJob map[string]chan string // per job, the preempted leases' IDs
}

func newPreemptions(deps preemptDeps) *preemptions {
	return &preemptions{preemptDeps: deps, byJob: map[string]chan string{}}
}

// of returns the channel on which the job's preempted lease IDs arrive
// when their notice runs out.
func (pm *preemptions) of(jobID string) chan string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	ch, ok := pm.byJob[jobID]
	if !ok {
		ch = make(chan string, 4)
		pm.byJob[jobID] = ch
	}
	return ch
}

// handle receives a provider's signed notice over lease.PreemptProto.
// The lease keeps running until EffectiveAtMs; then it is recorded as
// preempted and the job's auction runs again.
func (pm *preemptions) handle(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	notice, signer, err := auction.OpenPreemptNotice(req)
	if err != nil {
		return nil, lease.Malformed(err)
	}
	if signer != from {
		return nil, lease.Malformed(fmt.Errorf("notice signed by %s but sent by %s", signer, from))
	}
	l, err := pm.db.GetLease(notice.Lease)
	if err != nil {
		return nil, fmt.Errorf("preempt notice for unknown lease: %w", err)
	}
	if l.Provider != notice.Provider || l.Side != lease.SideRenter {
		return nil, errors.New("preempt notice from a provider that does not hold this lease")
	}
	if l.PreemptAtMs != 0 {
		return lease.Ack, nil // a retried notice
	}
	if lease.State(l.State).Terminal() {
		// The work already stopped (it exited on the notice's SIGTERM and
		// the renter heard of it first): keep the notice on record.
		if _, err := pm.leases.Update(l.ID, func(l *store.Lease) bool { l.PreemptAtMs = notice.EffectiveAtMs; return true }); err != nil {
			pm.log.Warn("store lease", "lease", lease.Short(l.ID), "err", err)
		}
		pm.jobs.event(l.RenterJobID(), "preempt-notice", "provider %s preempted lease %s with %ds notice: %s", lease.Short(l.Provider), lease.Short(l.ID), notice.NoticeSec, notice.Reason)
		return lease.Ack, nil
	}
	if notice.NoticeSec < l.NoticeSec {
		pm.log.Warn("provider broke its promised preemption notice", "provider", notice.Provider, "promised_s", l.NoticeSec, "given_s", notice.NoticeSec)
	}
	if _, err := pm.leases.Update(l.ID, func(l *store.Lease) bool { l.PreemptAtMs = notice.EffectiveAtMs; return true }); err != nil {
		return nil, err
	}
	pm.jobs.event(l.RenterJobID(), "preempt-notice", "provider %s preempts lease %s in %ds: %s", lease.Short(l.Provider), lease.Short(l.ID), notice.NoticeSec, notice.Reason)
	wait := time.UnixMilli(notice.EffectiveAtMs).Sub(pm.now())
	err = pm.background(func(ctx context.Context) {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pm.finish(l.ID, lease.Preempted, notice.Reason)
		select {
		case pm.of(l.RenterJobID()) <- l.ID:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	return lease.Ack, nil
}
