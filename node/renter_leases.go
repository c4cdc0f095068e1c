package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Lease states, on both sides: the provider records them as the work
// moves, the renter mirrors them over the job protocol.
const (
	// LeaseAwarded: countersigned, not started (it may wait for the
	// preemption notice owed to a bronze lease on the same GPUs).
	LeaseAwarded = "awarded"
	// LeasePreparing: the provider fetches the spec and artifacts and
	// creates the workload.
	LeasePreparing = "preparing"
	LeaseRunning   = "running"
	LeaseCompleted = "completed"
	LeasePreempted = "preempted"
	LeaseCancelled = "cancelled"
	LeaseFailed    = "failed"
	LeaseExpired   = "expired"
)

func terminalLease(state string) bool {
	switch state {
	case LeaseCompleted, LeasePreempted, LeaseCancelled, LeaseFailed, LeaseExpired:
		return true
	}
	return false
}

// finishLease records a lease's final state (idempotent: a terminal lease
// keeps its first outcome).
func (a *auctioneer) finishLease(id, state, reason string) {
	if _, _, err := a.n.leases.finish(id, state, reason, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.log.Warn("store lease", "lease", id, "err", err)
	}
	a.n.rep.invalidate()
}

// preemptions returns the channel on which the job's preempted lease IDs
// arrive when their notice runs out.
func (a *auctioneer) preemptions(jobID string) chan string {
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

// handlePreempt receives a provider's signed notice over PreemptProto.
// The lease keeps running until EffectiveAtMs; then it is recorded as
// preempted and the job's auction runs again.
func (a *auctioneer) handlePreempt(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	notice, signer, err := auction.OpenPreemptNotice(req)
	if err != nil {
		return nil, err
	}
	if signer != from {
		return nil, fmt.Errorf("notice signed by %s but sent by %s", signer, from)
	}
	l, err := a.n.db.GetLease(notice.Lease)
	if err != nil {
		return nil, fmt.Errorf("preempt notice for unknown lease: %w", err)
	}
	if l.Provider != notice.Provider || l.Side != "renter" {
		return nil, errors.New("preempt notice from a provider that does not hold this lease")
	}
	if l.PreemptAtMs != 0 {
		return bidAck, nil // a retried notice
	}
	if terminalLease(l.State) {
		// The work already stopped (it exited on the notice's SIGTERM and
		// the renter heard of it first): keep the notice on record.
		_, _ = a.n.leases.update(l.ID, func(l *store.Lease) bool { l.PreemptAtMs = notice.EffectiveAtMs; return true })
		a.jobs.event(l.JobCID, "preempt-notice", "provider %s preempted lease %s with %ds notice: %s", short(l.Provider), short(l.ID), notice.NoticeSec, notice.Reason)
		return bidAck, nil
	}
	if notice.NoticeSec < l.NoticeSec {
		a.log.Warn("provider broke its promised preemption notice", "provider", notice.Provider, "promised_s", l.NoticeSec, "given_s", notice.NoticeSec)
	}
	if _, err := a.n.leases.update(l.ID, func(l *store.Lease) bool { l.PreemptAtMs = notice.EffectiveAtMs; return true }); err != nil {
		return nil, err
	}
	a.jobs.event(l.JobCID, "preempt-notice", "provider %s preempts lease %s in %ds: %s", short(l.Provider), short(l.ID), notice.NoticeSec, notice.Reason)
	wait := time.Until(time.UnixMilli(notice.EffectiveAtMs))
	err = a.background(func(ctx context.Context) {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.finishLease(l.ID, LeasePreempted, notice.Reason)
		select {
		case a.preemptions(l.JobCID) <- l.ID:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	return bidAck, nil
}
