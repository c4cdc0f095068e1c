package renter

import (
	"context"
	"errors"
	"fmt"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ErrJobEnded is returned when cancelling a job that already ended.
var ErrJobEnded = errors.New("job already ended")

// jobRun is one running job's cancel function.
type jobRun struct{ cancel context.CancelFunc }

// runJob runs fn (the job's auction and the following of its leases) on a
// context that Cancel ends.
func (a *Renter) runJob(ctx context.Context, jobID string, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	run := &jobRun{cancel: cancel}
	a.mu.Lock()
	if prev := a.cancels[jobID]; prev != nil {
		prev.cancel()
	}
	a.cancels[jobID] = run
	a.mu.Unlock()
	defer func() {
		cancel()
		a.mu.Lock()
		// A resubmission may have replaced it.
		if a.cancels[jobID] == run {
			delete(a.cancels, jobID)
		}
		a.mu.Unlock()
	}()
	fn(ctx)
}

// Cancel stops a job: its auction ends, each live lease's provider is told
// to stop the work (with its grace), and the job is recorded cancelled.
func (a *Renter) Cancel(ctx context.Context, jobID string) (*store.Job, error) {
	j, err := a.db.GetJob(jobID)
	if err != nil {
		return nil, err
	}
	if lease.JobState(j.State).Terminal() {
		return j, fmt.Errorf("job %s: %w (%s)", jobID, ErrJobEnded, j.State)
	}
	a.mu.Lock()
	run := a.cancels[jobID]
	a.mu.Unlock()
	if run != nil {
		run.cancel()
	}
	for _, id := range j.Leases {
		if l, err := a.db.GetLease(id); err == nil && !lease.State(l.State).Terminal() {
			a.cancelLease(ctx, l, "job cancelled by the renter")
		}
	}
	return a.jobs.setState(jobID, lease.JobCancelled, "cancelled", "cancelled by the renter")
}
