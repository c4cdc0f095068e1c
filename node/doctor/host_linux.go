package doctor

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// FreeBytes is the free space available to unprivileged users on dir's
// filesystem.
func FreeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// ClockSync reads the kernel's NTP state (adjtimex, read only): whether
// the clock is synchronized and its maximum error.
func ClockSync() (bool, time.Duration, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return false, 0, fmt.Errorf("adjtimex: %w", err)
	}
	return state != unix.TIME_ERROR, time.Duration(tx.Maxerror) * time.Microsecond, nil
}
