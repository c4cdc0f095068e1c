package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f size bytes of real blocks (not a sparse hole), so
// writes into them cannot fail for space.
func allocate(f *os.File, size int64) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, size)
}

// reserveBlocks allocates the blocks under f's first size bytes without
// changing its size (a memtable log badger has sized sparsely).
func reserveBlocks(f *os.File, size int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
}
