// Package wasm is the embedded executor: it runs WASI (preview1) command
// modules on wazero, in pure Go, so the devnet and CPU-only providers need
// nothing installed.
//
// A workload sees only what the spec gives it: its args (argv[0] is the
// module CID), env, stdin, a clock, randomness and one writable directory
// at /out. No other host path, no network (wasip1 has no sockets to dial),
// one thread. Its stdout and stderr go to one bounded log; what it leaves in
// /out becomes the output tar.
//
// Limits: Limits.MemoryMiB caps linear memory (a refused grow marks the
// result "oom"), Limits.DiskMiB caps what /out may hold, and
// Limits.MaxDuration is enforced with a context deadline and wazero's
// WithCloseOnContextDone, which interrupts even a guest spinning in a loop.
// GPUs are not available to WASM; specs asking for them are refused. CPU and
// PID limits do not apply (one thread).
package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Runtime is the Spec.Runtime this executor serves.
const Runtime = "wasm"

// Config configures an Executor. Zero fields take the defaults noted.
type Config struct {
	// Dir holds one work directory per workload (required).
	Dir string
	// Artifacts is where modules are fetched from by CID (required). Every
	// module is verified against its CID whatever the store.
	Artifacts executor.Artifacts
	// CacheDir, if set, keeps compiled machine code across restarts, so a
	// module is compiled once per host rather than once per process.
	CacheDir string
	// MaxModuleBytes caps a module's size (default 64 MiB).
	MaxModuleBytes int64
	// DefaultMemoryMiB applies when a spec sets no memory limit (default 256).
	DefaultMemoryMiB int64
	// MaxMemoryMiB is the most memory one workload may ask for
	// (default and at most 4096, the wasm32 address space).
	MaxMemoryMiB int64
	// DefaultDiskMiB caps /out when a spec sets no disk limit (default 1024).
	DefaultDiskMiB int64
	// DefaultMaxDuration applies when a spec sets none (default 1h): nothing
	// runs unbounded.
	DefaultMaxDuration time.Duration
	// MaxLogBytes caps a workload's log (default 4 MiB).
	MaxLogBytes int64
	// Entropy, if set, replaces the host's clocks and randomness for every
	// workload (re-runs of wrong-result proofs); nil: the real ones.
	Entropy *Entropy
	// ReadOnlyMounts, if set, gives every workload more host directories
	// besides /out, read-only: guest path ("/a") to host directory. A
	// renter's output verifier reads the outputs it judges this way.
	ReadOnlyMounts map[string]string
}

func (c *Config) fill() error {
	if c.Dir == "" {
		return errors.New("empty Dir")
	}
	if c.Artifacts == nil {
		return errors.New("nil Artifacts")
	}
	if c.MaxModuleBytes <= 0 {
		c.MaxModuleBytes = 64 << 20
	}
	if c.DefaultMemoryMiB <= 0 {
		c.DefaultMemoryMiB = 256
	}
	if c.MaxMemoryMiB <= 0 || c.MaxMemoryMiB > 4096 {
		c.MaxMemoryMiB = 4096
	}
	c.DefaultMemoryMiB = min(c.DefaultMemoryMiB, c.MaxMemoryMiB)
	if c.DefaultDiskMiB <= 0 {
		c.DefaultDiskMiB = 1024
	}
	if c.DefaultMaxDuration <= 0 {
		c.DefaultMaxDuration = time.Hour
	}
	if c.MaxLogBytes <= 0 {
		c.MaxLogBytes = 4 << 20
	}
	return nil
}

// Executor runs WASI modules. It implements executor.Executor.
type Executor struct {
	cfg   Config
	log   *slog.Logger
	rt    wazero.Runtime
	cache wazero.CompilationCache

	// workloads also tracks the run goroutines (Go).
	workloads executor.Workloads[*workload]
}

var _ executor.Executor = (*Executor)(nil)

// New returns an Executor; a nil logger discards. One wazero runtime is
// shared by every workload: memory limits are per workload (see
// memoryLimiter), so compiled modules and the WASI host module are reused.
func New(cfg Config, logger *slog.Logger) (*Executor, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("wasm.New: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("wasm.New: %w", err)
	}
	rc := wazero.NewRuntimeConfig().
		// The page limit is the executor-wide ceiling; each workload's
		// own limit is enforced below it by memoryLimiter.
		WithMemoryLimitPages(uint32(cfg.MaxMemoryMiB * (1 << 20) / pageBytes)).
		WithCloseOnContextDone(true)
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("wasm.New: compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm.New: wasi: %w", err)
	}
	return &Executor{
		cfg: cfg, log: logger.With("executor", Runtime), rt: rt, cache: cache,
	}, nil
}

const pageBytes = 65536

// Name implements executor.Executor.
func (e *Executor) Name() string { return Runtime }

// Close stops every workload, removes their work directories and releases
// the runtime. It is idempotent.
func (e *Executor) Close() error {
	tracked, first := e.workloads.Close()
	if !first {
		return nil
	}
	var errs []error
	for _, w := range tracked {
		if err := e.remove(context.Background(), w); err != nil {
			errs = append(errs, err)
		}
	}
	e.workloads.Wait()
	ctx := context.Background()
	errs = append(errs, e.rt.Close(ctx))
	if e.cache != nil {
		errs = append(errs, e.cache.Close(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wasm.Close: %w", err)
	}
	return nil
}

func newHandle() executor.Handle { return executor.Handle("wasm-" + rand.Text()) }

// workDir is the work directory of h. Handles come from newHandle, so
// they are safe path elements.
func (e *Executor) workDir(h executor.Handle) string { return filepath.Join(e.cfg.Dir, string(h)) }
