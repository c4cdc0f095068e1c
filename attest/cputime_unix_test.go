//go:build unix

package attest

import (
	"syscall"
	"time"
)

// cpuNow is the process's CPU time (user + system, all threads: the
// garbage collector's work counts). On a shared machine it keeps
// benchmarks that compare two operations from charging one of them for
// time the process spent descheduled.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
