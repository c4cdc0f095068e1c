package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// harvest keeps a finished workload's log and outputs for the renter,
// removes the workload and records the lease's outcome.
func (r *leaseRunner) harvest(id string, ex executor.Executor, h executor.Handle, res executor.Result, stopCause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out executor.Output
	var logBytes int64
	var problems []string
	if err := os.MkdirAll(r.ex.resultDir(id), 0o700); err != nil {
		problems = append(problems, err.Error())
	} else {
		n, err := r.keepLog(ctx, id, ex, h)
		logBytes = n
		if err != nil {
			problems = append(problems, "keep log: "+err.Error())
		}
		if out, err = r.keepOutput(ctx, id, ex, h); err != nil {
			problems = append(problems, "keep outputs: "+err.Error())
		}
	}
	if err := ex.Remove(ctx, h); err != nil {
		r.log.Warn("remove workload", "lease", lease.Short(id), "err", err)
	}
	state, reason := outcome(res, stopCause)
	if len(problems) > 0 {
		r.log.Warn("results incomplete", "lease", lease.Short(id), "problems", problems)
	}
	code := res.ExitCode
	r.finish(id, state, reason, func(l *store.Lease) {
		l.Handle = ""
		l.ExitCode = &code
		if !res.StartedAt.IsZero() {
			l.WorkStartedMs = res.StartedAt.UnixMilli()
		}
		if !res.FinishedAt.IsZero() {
			l.WorkFinishedMs = res.FinishedAt.UnixMilli()
		}
		l.OutputCID, l.OutputSize, l.LogBytes = out.CID, out.Size, logBytes
	})
}

func (r *leaseRunner) keepLog(ctx context.Context, id string, ex executor.Executor, h executor.Handle) (int64, error) {
	rc, err := ex.Logs(ctx, h, false)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	f, err := os.Create(r.ex.logPath(id))
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, io.LimitReader(rc, int64(r.cfg.MaxLogMiB)<<20))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func (r *leaseRunner) keepOutput(ctx context.Context, id string, ex executor.Executor, h executor.Handle) (executor.Output, error) {
	out, err := ex.Outputs(ctx, h)
	if err != nil {
		return executor.Output{}, err
	}
	dst := r.ex.outputPath(id)
	if err := os.Rename(out.Path, dst); err != nil {
		// Another filesystem: copy.
		if err := copyFile(out.Path, dst); err != nil {
			return executor.Output{}, err
		}
	}
	out.Path = dst
	return out, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// outcome maps a workload's result to the lease's final state and reason.
func outcome(res executor.Result, stopCause error) (state, reason string) {
	with := func(s string) string {
		if res.Message != "" {
			return s + ": " + res.Message
		}
		return s
	}
	switch res.Reason {
	case executor.ReasonCompleted:
		return lease.Completed, "exited 0"
	case executor.ReasonFailed:
		if res.ExitCode >= 0 {
			return lease.Failed, with(fmt.Sprintf("exited %d", res.ExitCode))
		}
		return lease.Failed, with("failed")
	case executor.ReasonTrap:
		return lease.Failed, with("trapped")
	case executor.ReasonOOM:
		return lease.Failed, with("ran out of memory")
	case executor.ReasonTimeout:
		return lease.Expired, "ran past its maximum duration"
	case executor.ReasonStopped:
		switch {
		case errors.Is(stopCause, errUnpaid):
			return lease.Failed, "stopped: the renter's vouchers stopped coming"
		case errors.Is(stopCause, errPreempted):
			return lease.Preempted, "preempted for higher-tier work"
		case errors.Is(stopCause, errCancelled):
			return lease.Cancelled, "cancelled by the renter"
		}
		return lease.Failed, "stopped: the provider shut down while it ran"
	}
	return lease.Failed, with(res.Reason)
}
