package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// A full disk must never crash the node. Badger writes its memtable log
// (.mem) and new tables through mmaped files that it sizes with a sparse
// truncate, so running out of blocks under them is a SIGBUS, not an
// error. The store therefore
//
//   - refuses every write with a *LowSpaceError while its filesystem has
//     less than the low-space threshold free (statfs before each write);
//   - allocates the blocks of the memtable logs up front (fallocate), so
//     writes into the mapped log never fault;
//   - keeps a ballast file (headroomBytes, fallocated) that it deletes
//     before badger's Close and Open, which flush memtables into new
//     tables: that space is there even when something else filled the disk;
//   - refuses to open with a *LowSpaceError when even that is not free.

const (
	// DefaultLowSpaceMiB is the default free space below which writes are
	// refused.
	DefaultLowSpaceMiB = 256
	// memTableBytes is badger's memtable size; its log file is twice that.
	memTableBytes = 4 << 20
	// headroomBytes is the ballast: a flush of every memtable badger holds
	// (at most two here before writes stall), with room to spare.
	headroomBytes = 4 * memTableBytes
	// minOpenBytes is what badger's Open needs free (a new memtable log).
	minOpenBytes = 2 * memTableBytes
	ballastName  = "HEADROOM"
	// reserveEvery is how many writes pass between checks for a new
	// memtable log to allocate.
	reserveEvery = 256
)

// ErrDiskFull is matched by every write refused for lack of disk space.
var ErrDiskFull = errors.New("disk nearly full")

// LowSpaceError is the ErrDiskFull that says how much is free and needed.
type LowSpaceError struct {
	Dir     string
	FreeMiB uint64
	NeedMiB uint64
}

func (e *LowSpaceError) Error() string {
	return fmt.Sprintf("%v: %d MiB free on %s, need %d", ErrDiskFull, e.FreeMiB, e.Dir, e.NeedMiB)
}

// Is makes a LowSpaceError match ErrDiskFull.
func (e *LowSpaceError) Is(target error) bool { return target == ErrDiskFull }

// spaceGate is an on-disk store's free-space state.
type spaceGate struct {
	dir    string
	low    uint64 // bytes; 0: the gate is off
	writes atomic.Uint64
}

func lowSpaceBytes(mib int64) uint64 {
	switch {
	case mib == 0:
		return DefaultLowSpaceMiB << 20
	case mib < 0:
		return 0
	default:
		return uint64(mib) << 20
	}
}

func needFree(dir string, need uint64) error {
	free, err := FreeBytes(dir)
	if err != nil {
		return err
	}
	if free < need {
		return &LowSpaceError{Dir: dir, FreeMiB: free >> 20, NeedMiB: (need + 1<<20 - 1) >> 20}
	}
	return nil
}

// admit is called before every write.
func (g *spaceGate) admit() error {
	if g == nil || g.low == 0 {
		return nil
	}
	if err := needFree(g.dir, g.low); err != nil {
		return err
	}
	if g.writes.Add(1)%reserveEvery == 0 {
		reserveLogs(g.dir)
	}
	return nil
}

// FreeSpace reports the free bytes on the store's filesystem and whether
// they are below the low-space threshold, below which writes fail with
// ErrDiskFull. A provider stops bidding while low is true. An in-memory
// store, or one with the gate off, is never low.
func (d *DB) FreeSpace() (free uint64, low bool, err error) {
	if d.space == nil {
		return 0, false, nil
	}
	free, err = FreeBytes(d.space.dir)
	if err != nil {
		return 0, false, fmt.Errorf("store.FreeSpace: %w", err)
	}
	return free, d.space.low > 0 && free < d.space.low, nil
}

// reserveLogs allocates the blocks of every memtable log, so badger's
// writes into the mapped file cannot fault. Best effort: a log that cannot
// be allocated is what the low-space gate already guards.
func reserveLogs(dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*"+memExt))
	for _, path := range logs {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Size() > 0 {
			_ = reserveBlocks(f, st.Size())
		}
		_ = f.Close()
	}
}

// releaseBallast deletes the ballast, giving its space to badger's next
// flush.
func releaseBallast(dir string) error {
	err := os.Remove(filepath.Join(dir, ballastName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release headroom: %w", err)
	}
	return nil
}

// takeBallast allocates the ballast; on a disk too full for it the store
// runs without it (and refuses writes, the threshold being above it).
func takeBallast(dir string) error {
	path := filepath.Join(dir, ballastName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("take headroom: %w", err)
	}
	err = allocate(f, headroomBytes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("take headroom of %d MiB on %s: %w", headroomBytes>>20, dir, err)
	}
	return nil
}
