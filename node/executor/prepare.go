package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The steps of Prepare that do not depend on the runtime: every executor
// checks a spec the same way, sizes a workload from the same defaults, and
// lays out and packs its work directory alike.

// ValidateFor checks the spec as Validate does and that it is for runtime
// (ErrUnsupported otherwise).
func (s *Spec) ValidateFor(runtime string) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Runtime != runtime {
		return fmt.Errorf("runtime %q: %w", s.Runtime, ErrUnsupported)
	}
	return nil
}

// Defaults are what an executor gives a workload whose spec sets no
// limit, and the most memory one workload may ask for.
type Defaults struct {
	MemoryMiB    int64
	MaxMemoryMiB int64
	DiskMiB      int64
	MaxDuration  time.Duration
}

// Sizes are one workload's memory, disk and duration: the spec's limits,
// or the executor's defaults where the spec sets none.
type Sizes struct {
	MemoryMiB   int64
	DiskMiB     int64
	MaxDuration time.Duration
}

// Size applies d to l. Memory over d.MaxMemoryMiB is ErrLimit.
func (d Defaults) Size(l Limits) (Sizes, error) {
	s := Sizes{
		MemoryMiB:   orDefault(l.MemoryMiB, d.MemoryMiB),
		DiskMiB:     orDefault(l.DiskMiB, d.DiskMiB),
		MaxDuration: orDefault(l.MaxDuration, d.MaxDuration),
	}
	if s.MemoryMiB > d.MaxMemoryMiB {
		return Sizes{}, fmt.Errorf("memory %d MiB > %d MiB: %w", s.MemoryMiB, d.MaxMemoryMiB, ErrLimit)
	}
	return s, nil
}

// orDefault returns v, or def when v is zero.
func orDefault[T int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// OutDir is the directory in workDir that the workload sees as /out.
func OutDir(workDir string) string { return filepath.Join(workDir, "out") }

// MakeWorkDir creates workDir and its OutDir, readable by the daemon's
// user only.
func MakeWorkDir(workDir string) error { return os.MkdirAll(OutDir(workDir), 0o700) }

// OutputTar packs a finished workload's OutDir once, into out.tar next
// to it, and keeps the result until the workload is removed. Packing is
// deterministic, so a restarted daemon that packs again gets the same CID.
// The zero value is ready to use.
type OutputTar struct {
	mu  sync.Mutex
	out *Output
}

// Pack returns the packed outputs of workDir, packing them on the first
// call. The tar may hold a disk limit of diskBytes plus tar headers, no
// more (ErrTooLarge). A tar left by an earlier daemon is packed again.
func (t *OutputTar) Pack(workDir string, diskBytes int64) (Output, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out != nil {
		return *t.out, nil
	}
	tar := filepath.Join(workDir, "out.tar")
	if err := os.Remove(tar); err != nil && !os.IsNotExist(err) {
		return Output{}, err
	}
	out, err := PackOutputs(OutDir(workDir), tar, diskBytes+diskBytes/8+1<<20)
	if err != nil {
		return Output{}, err
	}
	t.out = &out
	return out, nil
}
