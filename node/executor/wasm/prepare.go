package wasm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Workload states.
const (
	statePrepared = iota
	stateRunning
	stateDone
)

// workload is one prepared module run.
type workload struct {
	h           executor.Handle
	spec        executor.Spec
	dir, outDir string
	memBytes    int64
	diskBytes   int64
	maxDuration time.Duration
	compiled    wazero.CompiledModule
	log         *executor.LogFile

	outputs executor.OutputTar

	mu     sync.Mutex
	state  int
	cancel context.CancelCauseFunc // set while running

	done chan struct{} // closed once res is final
	res  executor.Result
}

// Prepare implements executor.Executor: it checks the spec, fetches and
// verifies the module, compiles it (from the compilation cache when it has
// it) and creates the work directory.
func (e *Executor) Prepare(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	w, err := e.prepare(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("wasm.Prepare: %w", err)
	}
	if err := e.workloads.Add(w.h, w); err != nil {
		w.release(ctx)
		return "", fmt.Errorf("wasm.Prepare: %w", err)
	}
	e.log.Debug("prepared", "handle", w.h, "job", spec.JobID, "lease", spec.LeaseID, "module", spec.ModuleCID)
	return w.h, nil
}

func (e *Executor) prepare(ctx context.Context, spec executor.Spec) (*workload, error) {
	if err := spec.ValidateFor(Runtime); err != nil {
		return nil, err
	}
	if len(spec.Limits.GPUs) > 0 {
		return nil, fmt.Errorf("gpus: %w", executor.ErrUnsupported)
	}
	if spec.ModuleCID == "" {
		return nil, fmt.Errorf("%w: empty module cid", executor.ErrInvalidSpec)
	}
	if len(spec.Command) > 0 {
		// A module has one entry point; accepting a command would silently
		// run something other than what the renter asked for.
		return nil, fmt.Errorf("%w: command is not supported by wasm (use args)", executor.ErrInvalidSpec)
	}
	size, err := executor.Defaults{
		MemoryMiB: e.cfg.DefaultMemoryMiB, MaxMemoryMiB: e.cfg.MaxMemoryMiB,
		DiskMiB: e.cfg.DefaultDiskMiB, MaxDuration: e.cfg.DefaultMaxDuration,
	}.Size(spec.Limits)
	if err != nil {
		return nil, err
	}

	bin, err := executor.ReadArtifact(ctx, e.cfg.Artifacts, spec.ModuleCID, e.cfg.MaxModuleBytes)
	if err != nil {
		return nil, err
	}
	compiled, err := e.rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", spec.ModuleCID, err)
	}
	w := &workload{
		h: newHandle(), spec: spec, compiled: compiled, done: make(chan struct{}),
		memBytes: size.MemoryMiB << 20, diskBytes: size.DiskMiB << 20, maxDuration: size.MaxDuration,
	}
	if err := checkModule(compiled, bin, w.memBytes); err != nil {
		w.release(ctx)
		return nil, fmt.Errorf("module %s: %w", spec.ModuleCID, err)
	}
	w.dir = e.workDir(w.h)
	w.outDir = executor.OutDir(w.dir)
	if err := executor.MakeWorkDir(w.dir); err != nil {
		w.release(ctx)
		return nil, err
	}
	if w.log, err = executor.NewLogFile(filepath.Join(w.dir, "log"), e.cfg.MaxLogBytes); err != nil {
		w.release(ctx)
		return nil, err
	}
	return w, nil
}

// checkModule refuses, before anything runs, a module that is not a WASI
// command or whose initial memory already exceeds the limit.
func checkModule(m wazero.CompiledModule, bin []byte, memBytes int64) error {
	if _, ok := m.ExportedFunctions()["_start"]; !ok {
		return fmt.Errorf("%w: no _start export (not a wasi command)", executor.ErrUnsupported)
	}
	if len(m.ImportedMemories()) > 0 {
		return fmt.Errorf("%w: imports memory", executor.ErrUnsupported)
	}
	// The allocator hook cannot refuse a memory's initial size (wazero
	// requires it), so a module asking for more up front is refused here.
	// CompiledModule lists only exported memories, hence the parse.
	minPages, err := memoryMinPages(bin)
	if err != nil {
		return err
	}
	if int64(minPages)*pageBytes > memBytes {
		return fmt.Errorf("initial memory %d MiB over limit %d MiB: %w",
			int64(minPages)*pageBytes>>20, memBytes>>20, executor.ErrLimit)
	}
	return nil
}

// memoryMinPages returns the largest initial size, in pages, of the
// memories a (compiled, so well-formed) module defines.
func memoryMinPages(bin []byte) (uint32, error) {
	const memorySection = 5
	r := bin[8:] // magic and version
	for len(r) > 0 {
		id := r[0]
		size, n := uleb(r[1:])
		if n == 0 || uint64(len(r)-1-n) < size {
			return 0, errors.New("malformed section header")
		}
		body := r[1+n : 1+n+int(size)]
		r = r[1+n+int(size):]
		if id != memorySection {
			continue
		}
		count, n := uleb(body)
		body = body[n:]
		var maxMin uint32
		for range count {
			if len(body) == 0 {
				return 0, errors.New("malformed memory section")
			}
			flags := body[0]
			minP, n := uleb(body[1:])
			if n == 0 {
				return 0, errors.New("malformed memory limits")
			}
			body = body[1+n:]
			if flags&1 != 0 { // has a max: skip it
				_, n = uleb(body)
				body = body[n:]
			}
			maxMin = max(maxMin, uint32(min(minP, 1<<32-1)))
		}
		return maxMin, nil
	}
	return 0, nil
}

// uleb decodes an unsigned LEB128 value, returning it and its length (0 if
// malformed).
func uleb(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// release frees what prepare allocated.
func (w *workload) release(ctx context.Context) error {
	if w.log != nil {
		w.log.Close()
	}
	if w.compiled != nil {
		w.compiled.Close(ctx)
	}
	if w.dir != "" {
		return os.RemoveAll(w.dir)
	}
	return nil
}

// Artifact implements executor.ArtifactNamer: the module's CID, which
// Prepare checked the module's bytes against.
func (e *Executor) Artifact(_ context.Context, h executor.Handle) (string, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return "", fmt.Errorf("wasm.Artifact: %w", err)
	}
	return w.spec.ModuleCID, nil
}
