package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// How long a provider keeps trying to fetch a lease's spec or module from
// a renter that does not answer before the lease fails.
const fetchPatience = time.Minute

// execute runs one lease from its start to its recorded end: awarded →
// preparing (spec and artifacts fetched, workload created) → running →
// completed, failed, expired, preempted or cancelled. A lease resumed
// after a restart with a workload handle skips straight to waiting on it.
func (r *leaseRunner) execute(ctx context.Context, id string) {
	defer r.forget(id)
	l, err := r.p.db.GetLease(id)
	if err != nil {
		r.log.Warn("run lease", "lease", lease.Short(id), "err", err)
		return
	}
	if l.Handle == "" && !r.waitStart(ctx, l) {
		r.stoppedEarly(ctx, id, "before it started")
		return
	}
	if err := r.leaseGPUs(ctx, l); err != nil {
		if ctx.Err() != nil {
			r.stoppedEarly(ctx, id, "before it started")
			return
		}
		r.finish(id, lease.Failed, err.Error(), nil)
		return
	}
	ex, h, err := r.prepare(ctx, l)
	if err != nil {
		if ctx.Err() != nil {
			r.stoppedEarly(ctx, id, "while it was being prepared")
			return
		}
		r.finish(id, lease.Failed, err.Error(), nil)
		return
	}
	wctx, stopWatch := context.WithCancel(ctx)
	go r.payWatch(wctx, id)
	endService := r.runService(wctx, id, ex, h)
	res, detached := r.wait(ctx, id, ex, h)
	stopWatch()
	endService()
	if detached {
		// The node is shutting down and the workload outlives it: the
		// next start reattaches to it.
		r.releaseGPUs(l)
		return
	}
	r.harvest(id, ex, h, res, context.Cause(ctx))
}

// stoppedEarly records a lease stopped before its workload ran. A node
// shutting down leaves it as it is, to be resumed.
func (r *leaseRunner) stoppedEarly(ctx context.Context, id, when string) {
	switch c := context.Cause(ctx); {
	case errors.Is(c, errPreempted):
		r.finish(id, lease.Preempted, "preempted "+when, nil)
	case errors.Is(c, errCancelled):
		r.finish(id, lease.Cancelled, "cancelled by the renter "+when, nil)
	default:
		if l, err := r.p.db.GetLease(id); err == nil {
			r.releaseGPUs(l)
		}
	}
}

// prepare gets the lease's workload to running: it fetches and checks the
// job spec, fetches a WASM module, creates the workload and starts it,
// recording each step. A lease that already has a handle (reattached after
// a restart) is started only if it never was.
func (r *leaseRunner) prepare(ctx context.Context, l *store.Lease) (executor.Executor, executor.Handle, error) {
	if l.Handle != "" {
		ex, err := r.ex.get(l.Runtime)
		if err != nil {
			return nil, "", err
		}
		h := executor.Handle(l.Handle)
		if l.State == lease.Preparing {
			return ex, h, r.startWorkload(ctx, l.ID, ex, h)
		}
		return ex, h, nil
	}
	if _, err := r.setState(l.ID, lease.Preparing, nil); err != nil {
		return nil, "", err
	}
	w, err := r.workload(ctx, l)
	if err != nil {
		return nil, "", err
	}
	ex, err := r.ex.get(w.Runtime)
	if err != nil {
		return nil, "", err
	}
	if w.Runtime == "wasm" {
		if err := r.fetchModule(ctx, l, w.Module); err != nil {
			return nil, "", err
		}
	}
	h, err := ex.Prepare(ctx, r.execSpec(l, w))
	if err != nil {
		return nil, "", fmt.Errorf("prepare %s workload: %w", w.Runtime, err)
	}
	// Recorded before it starts, so a crash from here on leaves a handle
	// the next start reattaches to (or removes).
	if _, err := r.setState(l.ID, lease.Preparing, func(l *store.Lease) { l.Handle = string(h) }); err != nil {
		_ = ex.Remove(context.WithoutCancel(ctx), h)
		return nil, "", err
	}
	return ex, h, r.startWorkload(ctx, l.ID, ex, h)
}

func (r *leaseRunner) startWorkload(ctx context.Context, id string, ex executor.Executor, h executor.Handle) error {
	if err := ex.Start(ctx, h); err != nil {
		return fmt.Errorf("start workload: %w", err)
	}
	l, err := r.setState(id, lease.Running, func(l *store.Lease) { l.WorkStartedMs = r.now().UnixMilli() })
	if err != nil {
		return err
	}
	r.simulateLoad(l, true)
	// The chain records the start; the lease's attestations begin there.
	seq := r.p.attest.jobEvent(l, attest.JobStarted)
	_, err = r.book.Update(id, func(l *store.Lease) bool { l.ChainSeq = seq; return true })
	return err
}

// workload returns the lease's job, fetching the spec from the renter the
// first time and checking that it is the job the award named.
func (r *leaseRunner) workload(ctx context.Context, l *store.Lease) (*auction.Workload, error) {
	raw := l.Spec
	if raw == nil {
		renter, err := peer.Decode(l.Renter)
		if err != nil {
			return nil, err
		}
		var h *jobproto.Header
		err = r.retry(ctx, "fetch the job spec", func(ctx context.Context) error {
			hdr, fr, err := r.p.jobCall(ctx, renter, &jobproto.Request{Op: jobproto.OpSpec, Lease: l.ID})
			if err != nil {
				return err
			}
			_ = fr.Close()
			h = hdr
			return nil
		})
		if err != nil {
			return nil, err
		}
		raw = h.Spec
	}
	spec, err := auction.ParseJobSpec(raw)
	if err != nil {
		return nil, fmt.Errorf("job spec from the renter: %w", err)
	}
	c, err := spec.CID()
	if err != nil {
		return nil, fmt.Errorf("job spec from the renter: %w", err)
	}
	if c.String() != l.JobCID {
		return nil, fmt.Errorf("the renter sent the spec of job %s, but the lease is for %s", c, l.JobCID)
	}
	w, err := spec.Workload()
	if err != nil {
		return nil, err
	}
	if l.Runtime != "" && w.Runtime != l.Runtime {
		return nil, fmt.Errorf("spec runtime %q differs from the RFQ's %q", w.Runtime, l.Runtime)
	}
	if l.Spec == nil {
		if _, err := r.setState(l.ID, lease.Preparing, func(s *store.Lease) { s.Spec, s.Runtime = raw, w.Runtime }); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// fetchModule copies a WASM module from the renter into the artifact
// store, verified against its CID, unless it is already there.
func (r *leaseRunner) fetchModule(ctx context.Context, l *store.Lease, id string) error {
	if r.ex.artifacts.Has(id) {
		return nil
	}
	renter, err := peer.Decode(l.Renter)
	if err != nil {
		return err
	}
	return r.retry(ctx, "fetch module "+id, func(ctx context.Context) error {
		_, fr, err := r.p.jobCall(ctx, renter, &jobproto.Request{Op: jobproto.OpArtifact, Lease: l.ID, CID: id})
		if err != nil {
			return err
		}
		defer fr.Close()
		pr, pw := io.Pipe()
		go func() { _, err := lease.CopyFrames(pw, fr); pw.CloseWithError(err) }()
		got, err := r.ex.artifacts.Put(pr, lease.MaxModuleBytes)
		_ = pr.CloseWithError(err)
		if err != nil {
			return err
		}
		if got != id {
			return lease.Permanent(fmt.Errorf("the renter sent module %s for %s", got, id))
		}
		return nil
	})
}

// retry runs fn until it succeeds, fails permanently (a refusal from the
// peer, a permanent error) or fetchPatience runs out.
func (r *leaseRunner) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	deadline := r.now().Add(fetchPatience)
	backoff := 200 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if lease.Final(err) || ctx.Err() != nil || r.now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		r.log.Debug("retrying", "what", what, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// execSpec turns a lease and its job into what the executor runs.
func (r *leaseRunner) execSpec(l *store.Lease, w *auction.Workload) executor.Spec {
	s := executor.Spec{
		JobID: l.JobCID, LeaseID: l.ID, Runtime: w.Runtime, Image: w.Image, ModuleCID: w.Module, Env: w.Env,
		Limits: executor.Limits{
			CPUCores:  float64(w.Resources.CPUCores),
			MemoryMiB: int64(w.Resources.RAMMiB),
			DiskMiB:   int64(w.Resources.DiskGiB) << 10,
			// The lease's end bounds the work, whatever the spec asked.
			MaxDuration: max(time.Second, time.UnixMilli(l.EndsAtMs).Sub(r.now())),
			Network:     executor.NetworkNone,
		},
	}
	if w.Service != nil {
		s.Ports = w.Service.Ports
	}
	if w.Egress && r.p.cfg.Offer.Egress {
		s.Limits.Network = executor.NetworkEgress
	}
	switch w.Runtime {
	case "docker":
		// command replaces the image's entrypoint, as `docker run
		// --entrypoint` would; without it the image's own runs.
		if len(w.Command) > 0 {
			s.Command = w.Command[:1]
			s.Args = w.Command[1:]
		}
		// Simulated GPUs have no devices to hand to a container.
		if r.p.gpus != nil && r.p.gpus.Name() == "nvml" {
			s.Limits.GPUs = l.GPUs
		}
	default:
		// WASM cannot use GPUs: the lease holds them, the module runs on
		// the CPU. Its command is argv[1:].
		s.Args = w.Command
	}
	return s
}

// wait waits for the workload. When the lease is stopped (preempted,
// cancelled) the workload gets its grace and the stopped result is
// returned. When the node shuts down, a workload that outlives the daemon
// is left running (detached); any other is stopped and reported.
func (r *leaseRunner) wait(ctx context.Context, id string, ex executor.Executor, h executor.Handle) (executor.Result, bool) {
	res, err := ex.Wait(ctx, h)
	if err == nil {
		return res, false
	}
	if ctx.Err() == nil {
		return executor.Result{ExitCode: -1, Reason: executor.ReasonFailed, Message: err.Error()}, false
	}
	c := context.Cause(ctx)
	if _, reattachable := ex.(executor.Reattacher); reattachable && !errors.Is(c, errPreempted) && !errors.Is(c, errCancelled) && !errors.Is(c, errUnpaid) {
		return executor.Result{}, true
	}
	grace := r.grace(id)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+30*time.Second)
	defer cancel()
	if err := ex.Stop(sctx, h, grace); err != nil {
		r.log.Warn("stop workload", "lease", lease.Short(id), "err", err)
	}
	res, err = ex.Wait(sctx, h)
	if err != nil {
		return executor.Result{ExitCode: -1, Reason: executor.ReasonFailed, Message: "workload did not stop: " + err.Error()}, false
	}
	return res, false
}

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

// loadSimulator is implemented by simulated GPU backends: a workload on a
// simulated GPU has no real kernels, so the node tells the simulation that
// a job loads it (utilization, power, energy and temperature follow).
type loadSimulator interface {
	SetLoad(uuid, jobID string, utilPct float64, memMiB uint64) error
	ClearLoad(uuid string) error
}

// simLoadPct and simLoadMiB are the load a leased simulated GPU shows.
const (
	simLoadPct = 85
	simLoadMiB = 2048
)

func (r *leaseRunner) simulateLoad(l *store.Lease, on bool) {
	sim, ok := r.p.gpus.(loadSimulator)
	if !ok {
		return
	}
	for _, g := range l.GPUs {
		var err error
		if on {
			err = sim.SetLoad(g, l.JobCID, simLoadPct, simLoadMiB)
		} else {
			err = sim.ClearLoad(g)
		}
		if err != nil {
			r.log.Debug("simulated load", "gpu", g, "on", on, "err", err)
		}
	}
}
