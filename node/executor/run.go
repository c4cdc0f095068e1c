package executor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Run drives one workload through Prepare, Start and Wait, which is what the
// node's lease work needs. When ctx is done first (preemption, cancellation,
// lease expiry) it stops the workload with grace and returns the stopped
// result together with ctx's error. The caller fetches Logs and Outputs from
// the returned handle and must Remove it; on a Prepare error the handle is
// empty and there is nothing to remove.
func Run(ctx context.Context, ex Executor, spec Spec, grace time.Duration) (Handle, Result, error) {
	h, err := ex.Prepare(ctx, spec)
	if err != nil {
		return "", Result{}, fmt.Errorf("executor.Run: %w", err)
	}
	if err := ex.Start(ctx, h); err != nil {
		return h, Result{}, fmt.Errorf("executor.Run: %w", err)
	}
	res, err := ex.Wait(ctx, h)
	if err == nil {
		return h, res, nil
	}
	if ctx.Err() == nil {
		return h, res, fmt.Errorf("executor.Run: %w", err)
	}
	// ctx is done but the workload is not: stop it on a context of our own,
	// bounded by the grace period plus a margin to collect the result.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+5*time.Second)
	defer cancel()
	serr := ex.Stop(sctx, h, grace)
	res, werr := ex.Wait(sctx, h)
	return h, res, fmt.Errorf("executor.Run: %w", errors.Join(ctx.Err(), serr, werr))
}
