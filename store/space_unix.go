//go:build unix

package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeBytes is the space an unprivileged writer can still use on dir's
// filesystem.
func FreeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}
