package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Start implements executor.Executor. It writes the spec's stdin through an
// attach made before the start, so the workload cannot miss its first
// bytes, and arms the max-duration timer.
func (e *Executor) Start(ctx context.Context, h executor.Handle) error {
	w, err := e.workloads.Get(h)
	if err != nil {
		return fmt.Errorf("docker.Start: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("docker.Start: %w", err)
	}
	// Once begun, a start is finished whatever ctx does: abandoned half-way
	// the container may run or not, and the caller would hold a handle
	// whose state disagrees with the error. A caller that gave up stops it
	// afterwards (executor.Run does). The engine's own bound applies.
	ctx, cancel := e.opCtx(context.WithoutCancel(ctx))
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, cleanupTimeout)
	defer cancelT()
	if err := e.start(ctx, w); err != nil {
		return fmt.Errorf("docker.Start: %w", e.closedErr(err))
	}
	return nil
}

func (e *Executor) start(ctx context.Context, w *workload) error {
	w.lifecycle.Lock()
	defer w.lifecycle.Unlock()
	ins, err := e.cli.ContainerInspect(ctx, w.id)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", w.h, err)
	}
	if ins.State.Status != container.StateCreated {
		return fmt.Errorf("%w: already started (%s)", executor.ErrState, ins.State.Status)
	}
	if end, ok := readEnd(w.dir); ok {
		return fmt.Errorf("%w: %s before start", executor.ErrState, end.reason)
	}
	stdin, err := os.ReadFile(filepath.Join(w.dir, stdinFile))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var att *types.HijackedResponse
	if len(stdin) > 0 {
		// The attach lives on the executor's context, not the caller's:
		// it must outlast Start until the workload has read its stdin.
		a, err := e.cli.ContainerAttach(e.ctx, w.id, container.AttachOptions{Stream: true, Stdin: true})
		if err != nil {
			return fmt.Errorf("attach stdin %s: %w", w.h, err)
		}
		att = &a
	}
	if err := e.cli.ContainerStart(ctx, w.id, container.StartOptions{}); err != nil {
		if att != nil {
			att.Close()
		}
		return fmt.Errorf("start %s: %w", w.h, err)
	}
	// Taken after the engine recorded StartedAt, so the deadline is never
	// earlier than StartedAt+maxDuration by the engine's clock.
	deadline := time.Now().Add(w.maxDuration)
	if att != nil && !e.workloads.Go(func() { e.writeStdin(w, att, stdin) }) {
		att.Close()
	}
	e.arm(w, deadline)
	w.notify()
	e.log.Info("started", "handle", w.h, "container", w.id[:12], "max_duration", w.maxDuration)
	return nil
}

// writeStdin writes the workload's stdin and closes it. StdinOnce makes the
// engine close the container's stdin when our side of the attach ends; the
// read until EOF waits for the engine to have taken everything.
func (e *Executor) writeStdin(w *workload, att *types.HijackedResponse, data []byte) {
	stop := context.AfterFunc(e.ctx, func() { att.Close() })
	defer stop()
	defer att.Close()
	if _, err := att.Conn.Write(data); err != nil {
		e.log.Warn("writing stdin failed", "handle", w.h, "err", err)
		return
	}
	if err := att.CloseWrite(); err != nil {
		e.log.Warn("closing stdin failed", "handle", w.h, "err", err)
		return
	}
	buf := make([]byte, 512)
	for {
		if _, err := att.Reader.Read(buf); err != nil {
			return
		}
	}
}

// arm (re)sets w's max-duration timer to fire at deadline; a deadline in
// the past (a reattached overdue workload) fires at once.
func (e *Executor) arm(w *workload, deadline time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timer = time.AfterFunc(time.Until(deadline), func() {
		e.workloads.Go(func() { e.expire(w) })
	})
}

// expire stops a workload that reached its max duration. The mark comes
// first, so that the exit the stop causes reads as a timeout; a mark
// already there (a Stop, or a timeout before a restart) wins.
func (e *Executor) expire(w *workload) {
	if err := markEnd(w.dir, executor.ReasonTimeout); err != nil && !os.IsExist(err) {
		e.log.Warn("timeout: mark failed", "handle", w.h, "err", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.TimeoutGrace+cleanupTimeout)
	defer cancel()
	secs := graceSeconds(e.cfg.TimeoutGrace)
	err := e.cli.ContainerStop(ctx, w.id, container.StopOptions{Timeout: &secs})
	if err != nil && !cerrdefs.IsNotFound(err) && e.ctx.Err() == nil {
		e.log.Warn("timeout: stop failed", "handle", w.h, "err", err)
		return
	}
	e.log.Info("max duration reached, stopped", "handle", w.h, "max_duration", w.maxDuration)
}

// graceSeconds rounds grace up to the engine's whole seconds, so a stop
// never gives less grace than asked.
func graceSeconds(grace time.Duration) int {
	return int((grace + time.Second - 1) / time.Second)
}

// Stop implements executor.Executor: SIGTERM (or the image's STOPSIGNAL),
// up to grace to exit, then SIGKILL; the engine does all three.
func (e *Executor) Stop(ctx context.Context, h executor.Handle, grace time.Duration) error {
	w, err := e.workloads.Get(h)
	if err != nil {
		return fmt.Errorf("docker.Stop: %w", err)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	if err := e.stop(ctx, w, grace); err != nil {
		return fmt.Errorf("docker.Stop: %w", e.closedErr(err))
	}
	return nil
}

func (e *Executor) stop(ctx context.Context, w *workload, grace time.Duration) error {
	w.lifecycle.Lock()
	ins, err := e.cli.ContainerInspect(ctx, w.id)
	if err != nil {
		w.lifecycle.Unlock()
		return fmt.Errorf("inspect %s: %w", w.h, err)
	}
	st := ins.State
	if st.Status == container.StateExited || st.Status == container.StateDead {
		w.lifecycle.Unlock()
		return nil // finished already: a no-op
	}
	if err := markEnd(w.dir, executor.ReasonStopped); err != nil && !os.IsExist(err) {
		w.lifecycle.Unlock()
		return fmt.Errorf("mark stop: %w", err)
	}
	// Unlocked before the (long) stop: Start sees the mark and refuses.
	w.lifecycle.Unlock()
	if st.Status == container.StateCreated {
		w.notify() // never started: over before it began
		return nil
	}
	secs := graceSeconds(grace)
	if err := e.cli.ContainerStop(ctx, w.id, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop %s: %w", w.h, err)
	}
	return nil
}

// Wait implements executor.Executor.
func (e *Executor) Wait(ctx context.Context, h executor.Handle) (executor.Result, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return executor.Result{}, fmt.Errorf("docker.Wait: %w", err)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	res, err := e.wait(ctx, w)
	if err != nil {
		return executor.Result{}, fmt.Errorf("docker.Wait: %w", e.closedErr(err))
	}
	return res, nil
}

func (e *Executor) wait(ctx context.Context, w *workload) (executor.Result, error) {
	for {
		// Read before the inspect, so a Start or Stop in between is not missed.
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		ins, err := e.cli.ContainerInspect(ctx, w.id)
		if cerrdefs.IsNotFound(err) {
			return executor.Result{}, fmt.Errorf("%q: %w", w.h, executor.ErrUnknownHandle)
		}
		if err != nil {
			return executor.Result{}, fmt.Errorf("inspect %s: %w", w.h, err)
		}
		end, _ := readEnd(w.dir)
		if res, done := result(ins.State, end, time.Now()); done {
			return res, nil
		}
		if ins.State.Status == container.StateCreated {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return executor.Result{}, ctx.Err()
			}
		}
		okC, errC := e.cli.ContainerWait(ctx, w.id, container.WaitConditionNotRunning)
		select {
		case <-okC:
		case err := <-errC:
			if ctx.Err() != nil {
				return executor.Result{}, ctx.Err()
			}
			if !cerrdefs.IsNotFound(err) {
				return executor.Result{}, fmt.Errorf("wait %s: %w", w.h, err)
			}
		}
	}
}

// result maps a container's state, and the executor's mark of why it ended
// it, to a Result; done is false while the workload has not finished.
// A mark counts only for an exit at or after it: a workload that finished
// on its own just before a Stop keeps its own result.
func result(st *container.State, end endMark, now time.Time) (res executor.Result, done bool) {
	if st == nil {
		return executor.Result{}, false
	}
	switch st.Status {
	case container.StateCreated:
		switch {
		case end.reason != "":
			return executor.Result{ExitCode: -1, Reason: end.reason, StartedAt: end.at, FinishedAt: end.at}, true
		case st.Error != "":
			// The engine could not start it (a missing entrypoint, say).
			at := parseTime(st.FinishedAt)
			if at.IsZero() {
				at = now
			}
			return executor.Result{ExitCode: -1, Reason: executor.ReasonFailed, Message: st.Error,
				StartedAt: at, FinishedAt: at}, true
		}
		return executor.Result{}, false
	case container.StateExited, container.StateDead:
	default:
		return executor.Result{}, false
	}
	res = executor.Result{
		ExitCode: st.ExitCode, StartedAt: parseTime(st.StartedAt), FinishedAt: parseTime(st.FinishedAt),
	}
	if res.FinishedAt.Before(res.StartedAt) {
		// The engine records StartedAt after the start call returns, and
		// a process quick enough to exit before then gets a FinishedAt
		// earlier than its StartedAt.
		res.FinishedAt = res.StartedAt
	}
	switch {
	case end.reason != "" && !res.FinishedAt.Before(end.at):
		res.ExitCode, res.Reason = -1, end.reason
		if end.reason == executor.ReasonTimeout {
			res.Message = "max duration reached"
		}
	case st.OOMKilled:
		res.Reason, res.Message = executor.ReasonOOM, "memory limit reached"
		if st.ExitCode == 128+9 { // SIGKILLed by the OOM killer, not an exit
			res.ExitCode = -1
		}
	case st.ExitCode == 0:
		res.Reason = executor.ReasonCompleted
	default:
		res.Reason, res.Message = executor.ReasonFailed, fmt.Sprintf("exit code %d", st.ExitCode)
		if st.Error != "" {
			res.Message += ": " + st.Error
		}
	}
	return res, true
}

// parseTime parses the engine's timestamps; its zero time
// ("0001-01-01T00:00:00Z") and garbage give the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// finished reports whether w's container has finished, for Outputs.
func (e *Executor) finished(ctx context.Context, w *workload) (bool, error) {
	ins, err := e.cli.ContainerInspect(ctx, w.id)
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", w.h, err)
	}
	end, _ := readEnd(w.dir)
	_, done := result(ins.State, end, time.Now())
	return done, nil
}
