package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/wasm"
)

// executors are a provider's runtimes by name, the artifact store modules
// are fetched into, and the directory where finished work's logs and
// outputs wait for the renter.
type executors struct {
	byRuntime map[string]executor.Executor
	artifacts *executor.DirArtifacts
	results   string
	log       *slog.Logger
	closers   []func() error
}

// openExecutors opens the runtimes a provider offers. Injected executors
// (tests) replace the built-in ones of the same name. A runtime that cannot
// run here (no Docker engine) is left out with a warning, and the returned
// runtimes are what the provider may advertise.
func openExecutors(cfg Config, dir string, artifacts *executor.DirArtifacts, injected []executor.Executor, instance string, log *slog.Logger) (*executors, []string, error) {
	e := &executors{
		byRuntime: map[string]executor.Executor{}, artifacts: artifacts,
		results: filepath.Join(dir, "results"), log: log,
	}
	if err := os.MkdirAll(e.results, 0o700); err != nil {
		return nil, nil, fmt.Errorf("open executors: %w", err)
	}
	for _, ex := range injected {
		e.byRuntime[ex.Name()] = ex
		if c, ok := ex.(interface{ Close() error }); ok {
			e.closers = append(e.closers, c.Close)
		}
	}
	var offered []string
	for _, rt := range cfg.Offer.Runtimes {
		if _, ok := e.byRuntime[rt]; ok {
			offered = append(offered, rt)
			continue
		}
		ex, closer, err := openRuntime(rt, cfg, dir, artifacts, instance, log)
		if err != nil {
			if errors.Is(err, errRuntimeUnavailable) {
				log.Warn("runtime not offered", "runtime", rt, "err", err)
				continue
			}
			_ = e.Close()
			return nil, nil, fmt.Errorf("open executors: %s: %w", rt, err)
		}
		e.byRuntime[rt] = ex
		e.closers = append(e.closers, closer)
		offered = append(offered, rt)
	}
	return e, offered, nil
}

// errRuntimeUnavailable marks a runtime this host cannot offer (as opposed
// to a misconfiguration, which stops the node).
var errRuntimeUnavailable = errors.New("runtime unavailable on this host")

func openRuntime(rt string, cfg Config, dir string, artifacts *executor.DirArtifacts, instance string, log *slog.Logger) (executor.Executor, func() error, error) {
	maxLog := int64(cfg.Executor.MaxLogMiB) << 20
	switch rt {
	case wasm.Runtime:
		ex, err := wasm.New(wasm.Config{
			Dir: filepath.Join(dir, "work", "wasm"), Artifacts: artifacts,
			CacheDir: filepath.Join(dir, "cache", "wasm"), MaxLogBytes: maxLog,
		}, log.With("runtime", rt))
		if err != nil {
			return nil, nil, err
		}
		return ex, ex.Close, nil
	case "docker":
		return openDocker(cfg, filepath.Join(dir, "work", "docker"), instance, log.With("runtime", rt))
	}
	return nil, nil, fmt.Errorf("unknown runtime %q", rt)
}

// get returns the executor of a runtime.
func (e *executors) get(rt string) (executor.Executor, error) {
	ex, ok := e.byRuntime[rt]
	if !ok {
		return nil, fmt.Errorf("runtime %q is not offered by this provider", rt)
	}
	return ex, nil
}

// reconcile hands each reattachable executor the handles the store still
// tracks for it: workloads nobody tracks are removed, and the tracked ones
// it cannot find are returned (their leases failed while we were down).
func (e *executors) reconcile(ctx context.Context, tracked map[string][]executor.Handle) (missing map[executor.Handle]bool) {
	missing = map[executor.Handle]bool{}
	for rt, ex := range e.byRuntime {
		r, ok := ex.(executor.Reattacher)
		if !ok {
			for _, h := range tracked[rt] {
				missing[h] = true
			}
			continue
		}
		ms, err := r.Reconcile(ctx, tracked[rt])
		if err != nil {
			e.log.Warn("reconcile workloads", "runtime", rt, "err", err)
		}
		for _, h := range ms {
			missing[h] = true
		}
	}
	return missing
}

func (e *executors) resultDir(leaseID string) string { return filepath.Join(e.results, leaseID) }

// logPath and outputPath are where a finished lease's log and output tar
// are kept for the renter.
func (e *executors) logPath(leaseID string) string {
	return filepath.Join(e.resultDir(leaseID), "log")
}
func (e *executors) outputPath(leaseID string) string {
	return filepath.Join(e.resultDir(leaseID), "output.tar")
}

// pruneResults removes kept results older than keep.
func (e *executors) pruneResults(keep time.Duration, now time.Time) {
	entries, err := os.ReadDir(e.results)
	if err != nil {
		return
	}
	for _, ent := range entries {
		info, err := ent.Info()
		if err != nil || now.Sub(info.ModTime()) < keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(e.results, ent.Name())); err != nil {
			e.log.Warn("prune results", "lease", ent.Name(), "err", err)
		}
	}
}

// Close closes every executor, the last opened first.
func (e *executors) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	return errors.Join(errs...)
}
