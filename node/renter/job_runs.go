package renter

import (
	"context"
	"sync"
)

// jobRun is one running job's cancel function.
type jobRun struct{ cancel context.CancelFunc }

// jobRuns are the running jobs' cancel functions, by job ID: Cancel ends
// a job's auction and the following of its leases through them.
type jobRuns struct {
	mu      sync.Mutex
	cancels map[string]*jobRun
}

func newJobRuns() *jobRuns { return &jobRuns{cancels: map[string]*jobRun{}} }

// run runs fn (the job's auction and the following of its leases) on a
// context that stop ends.
func (jr *jobRuns) run(ctx context.Context, jobID string, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	run := &jobRun{cancel: cancel}
	jr.mu.Lock()
	if prev := jr.cancels[jobID]; prev != nil {
		prev.cancel()
	}
	jr.cancels[jobID] = run
	jr.mu.Unlock()
	defer func() {
		cancel()
		jr.mu.Lock()
		// A resubmission may have replaced it.
		if jr.cancels[jobID] == run {
			delete(jr.cancels, jobID)
		}
		jr.mu.Unlock()
	}()
	fn(ctx)
}

// stop ends the job's run, if it has one.
func (jr *jobRuns) stop(jobID string) {
	jr.mu.Lock()
	run := jr.cancels[jobID]
	jr.mu.Unlock()
	if run != nil {
		run.cancel()
	}
}
