package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/idlegrid/idlegrid/node/executor"
)

// workload is one container. Everything in it can be rebuilt from the
// container (its name, ID and labels) and the work directory, which is
// what Reconcile does after a restart.
type workload struct {
	h           executor.Handle
	id          string // container ID
	image       string // image ID the container was created from; "" after Reconcile
	dir         string
	outDir      string
	maxDuration time.Duration
	diskBytes   int64

	// lifecycle orders Start and Stop's check-then-act on the container.
	lifecycle sync.Mutex

	outputs executor.OutputTar

	mu      sync.Mutex
	timer   *time.Timer   // the max-duration deadline, once started
	changed chan struct{} // closed and replaced on Start and Stop-before-start
}

func newWorkload(h executor.Handle, dir string) *workload {
	return &workload{h: h, dir: dir, outDir: executor.OutDir(dir), changed: make(chan struct{})}
}

// notify wakes Waits blocked on a not-yet-started container.
func (w *workload) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
}

// disarm stops the deadline timer.
func (w *workload) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Files in a work directory, next to out/ and out.tar (see
// executor.OutputTar).
const (
	stdinFile  = "stdin"  // Spec.Stdin, written to the container at Start
	reasonFile = "reason" // why the executor ended the container, see markEnd
)

// Prepare implements executor.Executor: it checks the spec, resolves the
// image, creates the work directory and creates (but does not start) the
// container, so that a bad spec or a full engine fails here, before the
// lease starts.
func (e *Executor) Prepare(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	w, err := e.prepare(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("docker.Prepare: %w", e.closedErr(err))
	}
	if err := e.workloads.Add(w.h, w); err != nil {
		e.cleanup(w)
		return "", fmt.Errorf("docker.Prepare: %w", err)
	}
	e.log.Debug("prepared", "handle", w.h, "job", spec.JobID, "lease", spec.LeaseID, "image", spec.Image)
	return w.h, nil
}

func (e *Executor) prepare(ctx context.Context, spec executor.Spec) (*workload, error) {
	p, err := e.plan(spec)
	if err != nil {
		return nil, err
	}
	ref, err := parseImage(spec.Image)
	if err != nil {
		return nil, err
	}
	if p.image, err = e.resolveImage(ctx, ref); err != nil {
		return nil, err
	}
	h := newHandle()
	w := newWorkload(h, e.workDir(h))
	w.maxDuration, w.diskBytes, w.image = p.maxDuration, p.diskBytes, p.image.id
	p.outDir = w.outDir
	if err := executor.MakeWorkDir(w.dir); err != nil {
		return nil, err
	}
	// The workload may run as any user (nobody, or the image's); /out is
	// the one place it must be able to write.
	if err := os.Chmod(w.outDir, 0o777); err != nil {
		e.cleanup(w)
		return nil, err
	}
	if len(spec.Stdin) > 0 {
		if err := os.WriteFile(filepath.Join(w.dir, stdinFile), spec.Stdin, 0o600); err != nil {
			e.cleanup(w)
			return nil, err
		}
	}
	if len(spec.Ports) > 0 {
		if p.serviceNet, err = e.serviceNetwork(ctx); err != nil {
			e.cleanup(w)
			return nil, err
		}
	}
	cfg, hc := containerConfig(p)
	resp, err := e.cli.ContainerCreate(ctx, cfg, hc, nil, nil, string(h))
	if err != nil {
		// A create cancelled mid-way may still have made the container;
		// cleanup removes it by name.
		e.cleanup(w)
		return nil, fmt.Errorf("create container: %w", err)
	}
	w.id = resp.ID
	for _, warn := range resp.Warnings {
		// Typically "no swap limit support": the engine dropped MemorySwap.
		e.log.Warn("engine warning on create", "handle", h, "warning", warn)
	}
	return w, nil
}

// plan checks spec against the executor's limits and applies its defaults.
func (e *Executor) plan(spec executor.Spec) (plan, error) {
	if err := spec.ValidateFor(Runtime); err != nil {
		return plan{}, err
	}
	if spec.ModuleCID != "" {
		return plan{}, fmt.Errorf("%w: module cid is for wasm; docker runs Image", executor.ErrInvalidSpec)
	}
	for _, g := range spec.Limits.GPUs {
		// The engine joins device IDs with commas for the toolkit.
		if g == "" || strings.ContainsAny(g, ", \t\n") {
			return plan{}, fmt.Errorf("%w: gpu id %q", executor.ErrInvalidSpec, g)
		}
	}
	l := spec.Limits
	p := plan{
		spec: spec, instance: e.cfg.Instance, allowRoot: e.cfg.AllowRoot, init: e.init,
		maxLogBytes: e.cfg.MaxLogBytes, readOnly: e.cfg.ReadOnlyMounts,
	}
	size, err := executor.Defaults{
		MemoryMiB: e.cfg.DefaultMemoryMiB, MaxMemoryMiB: e.cfg.MaxMemoryMiB,
		DiskMiB: e.cfg.DefaultDiskMiB, MaxDuration: e.cfg.DefaultMaxDuration,
	}.Size(l)
	if err != nil {
		return plan{}, err
	}
	if size.MemoryMiB < 6 {
		return plan{}, fmt.Errorf("%w: memory %d MiB: the engine needs at least 6", executor.ErrInvalidSpec, size.MemoryMiB)
	}
	if p.pids = l.PIDs; p.pids == 0 {
		p.pids = e.cfg.DefaultPIDs
	}
	if p.pids > e.cfg.MaxPIDs {
		return plan{}, fmt.Errorf("pids %d > %d: %w", p.pids, e.cfg.MaxPIDs, executor.ErrLimit)
	}
	p.memBytes = size.MemoryMiB << 20
	p.diskBytes = size.DiskMiB << 20
	p.maxDuration = size.MaxDuration
	return p, nil
}

// Artifact implements executor.ArtifactNamer: the ID of the image the
// container was created from (the digest of its config, which pins every
// layer), asked of the engine for a container found by Reconcile.
func (e *Executor) Artifact(ctx context.Context, h executor.Handle) (string, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return "", fmt.Errorf("docker.Artifact: %w", err)
	}
	if w.image != "" {
		return w.image, nil
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	ins, err := e.cli.ContainerInspect(ctx, w.id)
	if err != nil {
		return "", fmt.Errorf("docker.Artifact: %w", e.closedErr(err))
	}
	return ins.Image, nil
}

// Remove implements executor.Executor: it force-removes the container
// (killing it if it runs) and deletes the work directory.
func (e *Executor) Remove(ctx context.Context, h executor.Handle) error {
	w, err := e.workloads.Get(h)
	if err != nil {
		return fmt.Errorf("docker.Remove: %w", err)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	if err := e.destroy(ctx, w); err != nil {
		return fmt.Errorf("docker.Remove: %w", e.closedErr(err))
	}
	e.workloads.Delete(h)
	w.notify()
	return nil
}

// destroy removes w's container, if any, and its work directory.
func (e *Executor) destroy(ctx context.Context, w *workload) error {
	w.disarm()
	name := w.id
	if name == "" {
		name = string(w.h)
	}
	err := e.cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", w.h, err)
	}
	if err := os.RemoveAll(w.dir); err != nil {
		return fmt.Errorf("remove work dir: %w", err)
	}
	return nil
}

// cleanup destroys w after a failure, on a context of its own: the
// caller's may be what failed.
func (e *Executor) cleanup(w *workload) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := e.destroy(ctx, w); err != nil {
		e.log.Warn("cleanup failed; Reconcile will retry at the next start", "handle", w.h, "err", err)
	}
}

// cleanupTimeout bounds removals done on the executor's own initiative.
const cleanupTimeout = 30 * time.Second

// labelInt reads an integer label, 0 if absent or malformed.
func labelInt(labels map[string]string, key string) int64 {
	v, _ := strconv.ParseInt(labels[key], 10, 64)
	return v
}
