package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// execute runs one lease from its start to its recorded end: awarded →
// preparing (spec and artifacts fetched, workload created) → running →
// completed, failed, expired, preempted or cancelled. A lease resumed
// after a restart with a workload handle skips straight to waiting on it.
func (r *leaseRunner) execute(ctx context.Context, id string) {
	defer r.forget(id)
	l, err := r.db.GetLease(id)
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
	go r.watchPay(wctx, id, func() { r.stop(id, errUnpaid, r.now().Add(r.cfg.StopGrace)) })
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
		if l, err := r.db.GetLease(id); err == nil {
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
	spec := r.execSpec(l, w)
	h, err := ex.Prepare(ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("prepare %s workload: %w", w.Runtime, err)
	}
	artifact := r.artifactOf(ctx, ex, h)
	// Recorded before it starts, so a crash from here on leaves a handle
	// the next start reattaches to (or removes).
	if _, err := r.setState(l.ID, lease.Preparing, func(l *store.Lease) {
		l.Handle = string(h)
		if artifact != "" {
			l.Artifact, l.Run = artifact, runSettings(spec)
		}
	}); err != nil {
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
	seq := r.jobEvent(l, attest.JobStarted)
	_, err = r.book.Update(id, func(l *store.Lease) bool { l.ChainSeq = seq; return true })
	return err
}

// artifactOf names what a prepared workload runs (executor.ArtifactNamer),
// or "" when its executor cannot say: the chain's job events then record
// no artifact (entry version 1).
func (r *leaseRunner) artifactOf(ctx context.Context, ex executor.Executor, h executor.Handle) string {
	n, ok := ex.(executor.ArtifactNamer)
	if !ok {
		return ""
	}
	a, err := n.Artifact(ctx, h)
	if err != nil || !attest.IsArtifact(a) {
		r.log.Warn("name the workload's artifact", "handle", h, "artifact", a, "err", err)
		return ""
	}
	return a
}

// runSettings are the settings of s that can change a run's result, as
// the chain's job events record them (attest.RunSettings).
func runSettings(s executor.Spec) *attest.RunSettings {
	network := s.Limits.Network
	if network == "" {
		network = executor.NetworkNone
	}
	return &attest.RunSettings{
		Runtime: s.Runtime, CPUMilli: uint32(s.Limits.CPUCores * 1000), MemoryMiB: uint32(s.Limits.MemoryMiB),
		DiskMiB: uint32(s.Limits.DiskMiB), Network: network, GPUs: uint16(len(s.Limits.GPUs)),
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
	if w.Egress && r.egress {
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
		if r.gpus != nil && r.gpus.Name() == "nvml" {
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
	sim, ok := r.gpus.(loadSimulator)
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
