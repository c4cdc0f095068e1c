package node

import (
	"context"
	"time"

	"github.com/idlegrid/idlegrid/store"
)

// Work is what runs on a lease. The execution layer (containers, WASM)
// implements it; until then a lease's work is a timer that lasts the job's
// expected duration.
type Work interface {
	// Run blocks until the work finishes (nil), fails (an error) or ctx is
	// cancelled (preemption, cancellation, expiry).
	Run(ctx context.Context, lease *store.Lease) error
}

// TimerWork is the placeholder work: it holds the lease's GPUs for the
// expected duration of the job.
type TimerWork struct {
	// Duration picks how long a lease's work lasts.
	Duration func(lease *store.Lease) time.Duration
}

// Run implements Work.
func (w TimerWork) Run(ctx context.Context, lease *store.Lease) error {
	t := time.NewTimer(w.Duration(lease))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
