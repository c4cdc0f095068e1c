package renter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// finishLease records a lease's final state (idempotent: a terminal lease
// keeps its first outcome).
func (a *Renter) finishLease(id, state, reason string) {
	if _, _, err := a.leases.Finish(id, state, reason, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.log.Warn("store lease", "lease", id, "err", err)
	}
	a.rep.Invalidate()
}

// preemptions returns the channel on which the job's preempted lease IDs
// arrive when their notice runs out.
func (a *Renter) preemptions(jobID string) chan string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.preempted == nil {
		a.preempted = map[string]chan string{}
	}
	ch, ok := a.preempted[jobID]
	if !ok {
		ch = make(chan string, 4)
		a.preempted[jobID] = ch
	}
	return ch
}

// handlePreempt receives a provider's signed notice over lease.PreemptProto.
// The lease keeps running until EffectiveAtMs; then it is recorded as
// preempted and the job's auction runs again.
func (a *Renter) handlePreempt(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	notice, signer, err := auction.OpenPreemptNotice(req)
	if err != nil {
		return nil, malformed(err)
	}
	if signer != from {
		return nil, malformed(fmt.Errorf("notice signed by %s but sent by %s", signer, from))
	}
	l, err := a.db.GetLease(notice.Lease)
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
		if _, err := a.leases.Update(l.ID, func(l *store.Lease) bool { l.PreemptAtMs = notice.EffectiveAtMs; return true }); err != nil {
			a.log.Warn("store lease", "lease", lease.Short(l.ID), "err", err)
		}
		a.jobs.event(l.RenterJobID(), "preempt-notice", "provider %s preempted lease %s with %ds notice: %s", lease.Short(l.Provider), lease.Short(l.ID), notice.NoticeSec, notice.Reason)
		return lease.Ack, nil
	}
	if notice.NoticeSec < l.NoticeSec {
		a.log.Warn("provider broke its promised preemption notice", "provider", notice.Provider, "promised_s", l.NoticeSec, "given_s", notice.NoticeSec)
	}
	if _, err := a.leases.Update(l.ID, func(l *store.Lease) bool { l.PreemptAtMs = notice.EffectiveAtMs; return true }); err != nil {
		return nil, err
	}
	a.jobs.event(l.RenterJobID(), "preempt-notice", "provider %s preempts lease %s in %ds: %s", lease.Short(l.Provider), lease.Short(l.ID), notice.NoticeSec, notice.Reason)
	wait := time.UnixMilli(notice.EffectiveAtMs).Sub(a.now())
	err = a.background(func(ctx context.Context) {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.finishLease(l.ID, lease.Preempted, notice.Reason)
		select {
		case a.preemptions(l.RenterJobID()) <- l.ID:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	return lease.Ack, nil
}
