// Package executortest holds test doubles and the conformance suite for
// executor implementations: Fake, a scripted in-process executor for node
// tests, and Suite, the behaviour every executor must share (run it from
// each implementation's tests with a Spec factory for its own runtime).
package executortest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Fake runs scripts instead of programs. Spec.Args is the script, one step
// per argument:
//
//	print:TEXT       append TEXT and a newline to the log
//	write:NAME=DATA  write DATA to NAME in the output directory
//	fill:NAME=BYTES  write BYTES bytes to NAME in the output directory: a
//	                 deterministic, incompressible stream (FillData), for
//	                 outputs too large to spell out
//	stdin            copy Spec.Stdin to the log
//	env:KEY          print the value of Spec.Env[KEY]
//	exit:N           finish with exit code N (the default is 0)
//	hang             block until stopped or timed out
//	sleep:DURATION   wait DURATION (a time.ParseDuration string), or until
//	                 stopped or timed out
//	checkpoint:NAME=DATA  from now on, being stopped writes DATA to NAME in
//	                 the output directory before the run ends (a workload
//	                 that saves its state on SIGTERM)
//
// It honours Limits.MaxDuration and Stop like a real executor, so the node
// can be tested against it without a runtime.
type Fake struct {
	// Runtime is the Spec.Runtime the fake serves (and its Name); "fake"
	// unless set before first use, so a node can be given a fake "docker"
	// or "wasm".
	Runtime string
	// WrongEvery makes a cheating executor: when n > 0, the n-th, 2n-th,
	// ... workload it prepares skips its script and writes a wrong
	// output (WrongFile) instead, still exiting 0: a provider returning a
	// wrong result for 1/n of its jobs. Set it before first use.
	WrongEvery int

	dir string
	log *slog.Logger

	mu      sync.Mutex
	next    int
	closed  bool
	handles map[executor.Handle]*fakeRun
}

type fakeRun struct {
	spec    executor.Spec
	dir     string
	log     *executor.LogFile
	started bool
	cancel  context.CancelCauseFunc
	done    chan struct{}
	res     executor.Result
}

// WrongFile is the output a cheating Fake (WrongEvery) writes instead of
// running the script.
const WrongFile = "wrong.txt"

// errStopped is the cancel cause of a run ended by Stop.
var errStopped = fmt.Errorf("stopped")

// NewFake returns a Fake that keeps its work directories under dir.
func NewFake(dir string, logger *slog.Logger) *Fake {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Fake{dir: dir, log: logger, handles: make(map[executor.Handle]*fakeRun)}
}

// Name implements executor.Executor.
func (f *Fake) Name() string {
	if f.Runtime == "" {
		return "fake"
	}
	return f.Runtime
}

// Prepare implements executor.Executor.
func (f *Fake) Prepare(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	if err := spec.ValidateFor(f.Name()); err != nil {
		return "", fmt.Errorf("fake.Prepare: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", fmt.Errorf("fake.Prepare: %w", executor.ErrClosed)
	}
	f.next++
	if f.WrongEvery > 0 && f.next%f.WrongEvery == 0 {
		spec.Args = []string{"write:" + WrongFile + "=not the job's result"}
	}
	h := executor.Handle(fmt.Sprintf("fake-%d", f.next))
	dir := filepath.Join(f.dir, string(h))
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		return "", fmt.Errorf("fake.Prepare: %w", err)
	}
	lf, err := executor.NewLogFile(filepath.Join(dir, "log"), 1<<20)
	if err != nil {
		return "", fmt.Errorf("fake.Prepare: %w", err)
	}
	f.handles[h] = &fakeRun{spec: spec, dir: dir, log: lf, done: make(chan struct{})}
	return h, nil
}

// Artifact implements executor.ArtifactNamer: the module's CID, or for an
// image reference an image ID derived from it (the fake resolves no
// image; one reference always names one "image").
func (f *Fake) Artifact(_ context.Context, h executor.Handle) (string, error) {
	r, err := f.get(h)
	if err != nil {
		return "", fmt.Errorf("fake.Artifact: %w", err)
	}
	if r.spec.ModuleCID != "" {
		return r.spec.ModuleCID, nil
	}
	sum := sha256.Sum256([]byte(r.spec.Image))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func (f *Fake) get(h executor.Handle) (*fakeRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.handles[h]
	if !ok {
		return nil, fmt.Errorf("%q: %w", h, executor.ErrUnknownHandle)
	}
	return r, nil
}

// Start implements executor.Executor.
func (f *Fake) Start(ctx context.Context, h executor.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.handles[h]
	if !ok {
		return fmt.Errorf("fake.Start: %q: %w", h, executor.ErrUnknownHandle)
	}
	if r.started {
		return fmt.Errorf("fake.Start: %w: already started", executor.ErrState)
	}
	r.started = true
	// The start time is taken before the deadline is armed, so a run cut
	// off at MaxDuration never reports less than it.
	startedAt := time.Now()
	rctx, cancel := context.WithCancelCause(context.Background())
	if d := r.spec.Limits.MaxDuration; d > 0 {
		var c2 context.CancelFunc
		rctx, c2 = context.WithTimeout(rctx, d)
		prev := cancel
		cancel = func(err error) { prev(err); c2() }
	}
	r.cancel = cancel
	go r.run(rctx, startedAt)
	return nil
}

func (r *fakeRun) run(ctx context.Context, startedAt time.Time) {
	res := executor.Result{StartedAt: startedAt, ExitCode: 0, Reason: executor.ReasonCompleted}
	defer func() {
		res.FinishedAt = time.Now()
		r.res = res
		r.log.CloseWrite()
		r.cancel(nil)
		close(r.done)
	}()
	checkpoint := ""
	stopped := func() {
		res.ExitCode, res.Reason = -1, executor.ReasonTimeout
		if context.Cause(ctx) == errStopped {
			res.Reason = executor.ReasonStopped
		}
		if name, data, ok := strings.Cut(checkpoint, "="); ok {
			_ = os.WriteFile(filepath.Join(r.dir, "out", filepath.Base(name)), []byte(data), 0o644)
		}
	}
	for _, step := range r.spec.Args {
		op, arg, _ := strings.Cut(step, ":")
		switch op {
		case "checkpoint":
			checkpoint = arg
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				res.ExitCode, res.Reason, res.Message = 2, executor.ReasonFailed, err.Error()
				return
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				stopped()
				return
			case <-t.C:
			}
		case "print":
			fmt.Fprintln(r.log, arg)
		case "write":
			name, data, _ := strings.Cut(arg, "=")
			if err := os.WriteFile(filepath.Join(r.dir, "out", filepath.Base(name)), []byte(data), 0o644); err != nil {
				res.ExitCode, res.Reason, res.Message = 1, executor.ReasonFailed, err.Error()
				return
			}
		case "fill":
			name, size, _ := strings.Cut(arg, "=")
			n, err := strconv.ParseInt(size, 10, 64)
			if err == nil && n < 0 {
				err = fmt.Errorf("negative size %d", n)
			}
			if err == nil {
				err = fill(ctx, filepath.Join(r.dir, "out", filepath.Base(name)), n)
			}
			if err != nil {
				if ctx.Err() != nil {
					stopped()
					return
				}
				res.ExitCode, res.Reason, res.Message = 1, executor.ReasonFailed, err.Error()
				return
			}
		case "stdin":
			r.log.Write(r.spec.Stdin)
		case "env":
			fmt.Fprintln(r.log, r.spec.Env[arg])
		case "exit":
			n, _ := strconv.Atoi(arg)
			if n != 0 {
				res.ExitCode, res.Reason = n, executor.ReasonFailed
			}
			return
		case "hang":
			<-ctx.Done()
			stopped()
			return
		default:
			res.ExitCode, res.Reason, res.Message = 127, executor.ReasonFailed, "unknown step "+step
			return
		}
	}
}

// FillData returns the bytes a fill:NAME=BYTES step writes: the first n
// bytes of a ChaCha8 stream with a fixed seed, so every run writes the
// same file and nothing on the way can compress it.
func FillData(n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8(fillSeed), n)
}

var fillSeed = [32]byte{'i', 'd', 'l', 'e', 'g', 'r', 'i', 'd', '-', 'f', 'i', 'l', 'l'}

// fill writes FillData(n) to path, in chunks, stopping if ctx ends.
func fill(ctx context.Context, path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	src, buf := FillData(n), make([]byte, 1<<20)
	for ctx.Err() == nil {
		k, rerr := io.ReadFull(src, buf)
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		if rerr != nil { // EOF: all n bytes written
			break
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return ctx.Err()
}

// Wait implements executor.Executor.
func (f *Fake) Wait(ctx context.Context, h executor.Handle) (executor.Result, error) {
	r, err := f.get(h)
	if err != nil {
		return executor.Result{}, fmt.Errorf("fake.Wait: %w", err)
	}
	select {
	case <-r.done:
		return r.res, nil
	case <-ctx.Done():
		return executor.Result{}, fmt.Errorf("fake.Wait: %w", ctx.Err())
	}
}

// Logs implements executor.Executor.
func (f *Fake) Logs(ctx context.Context, h executor.Handle, follow bool) (io.ReadCloser, error) {
	r, err := f.get(h)
	if err != nil {
		return nil, fmt.Errorf("fake.Logs: %w", err)
	}
	return r.log.Reader(ctx, follow), nil
}

// Stop implements executor.Executor.
func (f *Fake) Stop(ctx context.Context, h executor.Handle, grace time.Duration) error {
	f.mu.Lock()
	r, ok := f.handles[h]
	var cancel context.CancelCauseFunc
	if ok {
		cancel = r.cancel
	}
	if ok && !r.started {
		// Never started: finish it as stopped so Wait returns.
		r.started = true
		r.res = executor.Result{ExitCode: -1, Reason: executor.ReasonStopped, StartedAt: time.Now(), FinishedAt: time.Now()}
		r.log.CloseWrite()
		close(r.done)
	}
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("fake.Stop: %q: %w", h, executor.ErrUnknownHandle)
	}
	if cancel != nil {
		cancel(errStopped)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
		return nil
	case <-t.C:
		return fmt.Errorf("fake.Stop: %w", executor.ErrStopTimeout)
	case <-ctx.Done():
		return fmt.Errorf("fake.Stop: %w", ctx.Err())
	}
}

// Outputs implements executor.Executor.
func (f *Fake) Outputs(ctx context.Context, h executor.Handle) (executor.Output, error) {
	r, err := f.get(h)
	if err != nil {
		return executor.Output{}, fmt.Errorf("fake.Outputs: %w", err)
	}
	select {
	case <-r.done:
	default:
		return executor.Output{}, fmt.Errorf("fake.Outputs: %w: not finished", executor.ErrState)
	}
	tarPath := filepath.Join(r.dir, "out.tar")
	os.Remove(tarPath) // packing again gives the same bytes
	out, err := executor.PackOutputs(filepath.Join(r.dir, "out"), tarPath, 0)
	if err != nil {
		return executor.Output{}, fmt.Errorf("fake.Outputs: %w", err)
	}
	return out, nil
}

// Remove implements executor.Executor.
func (f *Fake) Remove(ctx context.Context, h executor.Handle) error {
	if err := f.Stop(ctx, h, 5*time.Second); err != nil {
		return fmt.Errorf("fake.Remove: %w", err)
	}
	f.mu.Lock()
	r := f.handles[h]
	delete(f.handles, h)
	f.mu.Unlock()
	r.log.Close()
	if err := os.RemoveAll(r.dir); err != nil {
		return fmt.Errorf("fake.Remove: %w", err)
	}
	return nil
}

// Close stops and removes every workload.
func (f *Fake) Close() error {
	f.mu.Lock()
	f.closed = true
	hs := make([]executor.Handle, 0, len(f.handles))
	for h := range f.handles {
		hs = append(hs, h)
	}
	f.mu.Unlock()
	var errs []error
	for _, h := range hs {
		if err := f.Remove(context.Background(), h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
