package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Cancel causes, telling a stop from a timeout once the module has exited.
var (
	errStopped = errors.New("stopped")
	errTimeout = errors.New("max duration reached")
)

// Start implements executor.Executor.
func (e *Executor) Start(ctx context.Context, h executor.Handle) error {
	w, err := e.workloads.Get(h)
	if err != nil {
		return fmt.Errorf("wasm.Start: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != statePrepared {
		return fmt.Errorf("wasm.Start: %w: already started or stopped", executor.ErrState)
	}
	// The run outlives ctx (Start returns at once); it ends by itself, at
	// its deadline, or through Stop, Remove and Close.
	started := time.Now() // before the deadline is set, so a timeout never looks early
	rctx, cancel := context.WithCancelCause(context.Background())
	rctx, cancelTimeout := context.WithTimeoutCause(rctx, w.maxDuration, errTimeout)
	stop := func(cause error) { cancel(cause); cancelTimeout() }
	// run takes w.mu only when the module has ended, so it waits for this
	// Start to set the state.
	if !e.workloads.Go(func() { e.run(rctx, w, started) }) {
		stop(nil)
		return fmt.Errorf("wasm.Start: %w", executor.ErrClosed)
	}
	w.cancel = stop
	w.state = stateRunning
	return nil
}

// run instantiates the module, which runs its _start, and records how it
// ended.
func (e *Executor) run(ctx context.Context, w *workload, started time.Time) {
	res := executor.Result{StartedAt: started}
	lim := &memoryLimiter{limitBytes: uint64(w.memBytes)}
	err := e.instantiate(experimental.WithMemoryAllocator(ctx, lim), w)
	res.FinishedAt = time.Now()
	res.ExitCode, res.Reason, res.Message = classify(err, context.Cause(ctx), lim.refused.Load())
	w.log.CloseWrite()
	e.log.Info("wasm workload finished", "handle", w.h, "job", w.spec.JobID, "lease", w.spec.LeaseID,
		"reason", res.Reason, "exit_code", res.ExitCode, "duration", res.FinishedAt.Sub(res.StartedAt))

	w.mu.Lock()
	w.state = stateDone
	w.cancel(nil) // release the timer
	w.mu.Unlock()
	w.res = res
	close(w.done)
}

func (e *Executor) instantiate(ctx context.Context, w *workload) error {
	spec := w.spec
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(newOutFS(w.outDir, w.diskBytes), "/out")
	for _, guest := range slices.Sorted(maps.Keys(e.cfg.ReadOnlyMounts)) {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(&sysfs.ReadFS{FS: sysfs.DirFS(e.cfg.ReadOnlyMounts[guest])}, guest)
	}
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances of one module may run at once
		WithArgs(append([]string{spec.ModuleCID}, spec.Args...)...).
		WithStdin(bytes.NewReader(spec.Stdin)).
		WithStdout(w.log).
		WithStderr(w.log).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		// wazero's own sleep ignores the context, so a guest sleeping past
		// its deadline would overstay; this one wakes at the deadline.
		WithNanosleep(func(ns int64) {
			t := time.NewTimer(time.Duration(ns))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		})
	if e.cfg.Entropy != nil {
		mc = e.cfg.Entropy.apply(mc)
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys) // environ order is visible to the guest; keep it stable
	for _, k := range keys {
		mc = mc.WithEnv(k, spec.Env[k])
	}
	mod, err := e.rt.InstantiateModule(ctx, w.compiled, mc)
	if mod != nil {
		mod.Close(context.Background())
	}
	return err
}

// classify maps how a module ended to a result. A failure after a refused
// memory grow is "oom" whatever form it took (a Go guest exits 2, a Rust
// one traps), since the refusal is the likely cause; a guest that coped
// with the refusal and exited 0 completed.
func classify(err, cause error, oom bool) (code int, reason, msg string) {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeContextCanceled, sys.ExitCodeDeadlineExceeded:
			if errors.Is(cause, errTimeout) {
				return -1, executor.ReasonTimeout, "max duration reached"
			}
			return -1, executor.ReasonStopped, ""
		}
		code := int(exit.ExitCode())
		if code == 0 {
			return 0, executor.ReasonCompleted, ""
		}
		if oom {
			return code, executor.ReasonOOM, "memory limit reached"
		}
		return code, executor.ReasonFailed, fmt.Sprintf("exit code %d", code)
	}
	switch {
	case err == nil:
		return 0, executor.ReasonCompleted, ""
	case oom:
		return -1, executor.ReasonOOM, "memory limit reached: " + firstLine(err.Error())
	default:
		// Anything else is the runtime aborting the module: a trap
		// (unreachable, out-of-bounds access, stack overflow) or a failed
		// instantiation.
		return -1, executor.ReasonTrap, firstLine(err.Error())
	}
}

// firstLine drops the wasm stack trace wazero appends to trap errors.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Wait implements executor.Executor.
func (e *Executor) Wait(ctx context.Context, h executor.Handle) (executor.Result, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return executor.Result{}, fmt.Errorf("wasm.Wait: %w", err)
	}
	select {
	case <-w.done:
		return w.res, nil
	case <-ctx.Done():
		return executor.Result{}, fmt.Errorf("wasm.Wait: %w", ctx.Err())
	}
}

// Logs implements executor.Executor.
func (e *Executor) Logs(ctx context.Context, h executor.Handle, follow bool) (io.ReadCloser, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return nil, fmt.Errorf("wasm.Logs: %w", err)
	}
	return w.log.Reader(ctx, follow), nil
}

// Stop implements executor.Executor. WASM has no signals to ask nicely
// with, so Stop cancels the run at once (wazero closes the module at its
// next function call or loop iteration) and grace only bounds the wait.
func (e *Executor) Stop(ctx context.Context, h executor.Handle, grace time.Duration) error {
	w, err := e.workloads.Get(h)
	if err != nil {
		return fmt.Errorf("wasm.Stop: %w", err)
	}
	if err := w.stop(ctx, grace); err != nil {
		return fmt.Errorf("wasm.Stop: %w", err)
	}
	return nil
}

func (w *workload) stop(ctx context.Context, grace time.Duration) error {
	w.mu.Lock()
	switch w.state {
	case statePrepared:
		// Never started: it is over before it began.
		now := time.Now()
		w.state = stateDone
		w.res = executor.Result{ExitCode: -1, Reason: executor.ReasonStopped, StartedAt: now, FinishedAt: now}
		w.log.CloseWrite()
		close(w.done)
	case stateRunning:
		w.cancel(errStopped)
	}
	w.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-t.C:
		return executor.ErrStopTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Outputs implements executor.Executor. The tar is packed once and kept
// until Remove.
func (e *Executor) Outputs(ctx context.Context, h executor.Handle) (executor.Output, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return executor.Output{}, fmt.Errorf("wasm.Outputs: %w", err)
	}
	select {
	case <-w.done:
	default:
		return executor.Output{}, fmt.Errorf("wasm.Outputs: %w: still running", executor.ErrState)
	}
	out, err := w.outputs.Pack(w.dir, w.diskBytes)
	if err != nil {
		return executor.Output{}, fmt.Errorf("wasm.Outputs: %w", err)
	}
	return out, nil
}

// Remove implements executor.Executor.
func (e *Executor) Remove(ctx context.Context, h executor.Handle) error {
	w, err := e.workloads.Get(h)
	if err != nil {
		return fmt.Errorf("wasm.Remove: %w", err)
	}
	if err := e.remove(ctx, w); err != nil {
		return fmt.Errorf("wasm.Remove: %w", err)
	}
	return nil
}

// remove stops w, forgets it and frees what it holds.
func (e *Executor) remove(ctx context.Context, w *workload) error {
	if err := w.stop(ctx, 30*time.Second); err != nil {
		return err
	}
	e.workloads.Delete(w.h)
	return w.release(ctx)
}
