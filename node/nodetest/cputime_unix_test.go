//go:build unix

package nodetest

import (
	"syscall"
	"time"
)

// cpuNow is the process's CPU time (user + system, all threads), for the
// CPU a benchmark phase cost every in-process node together.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
