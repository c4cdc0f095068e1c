//go:build !unix

package nodetest

import "time"

var cpuStart = time.Now()

// cpuNow falls back to wall time where getrusage is missing.
func cpuNow() time.Duration { return time.Since(cpuStart) }
