//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// tryLockDir takes and releases the flock badger holds on a store
// directory while it is open, so a running daemon's store reads as
// ErrLocked before anything reads its files (which it may be writing).
func tryLockDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return ErrLocked
		}
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
