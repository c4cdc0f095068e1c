//go:build !unix

package attest

import "time"

var start = time.Now()

// cpuNow falls back to wall time where getrusage is missing.
func cpuNow() time.Duration { return time.Since(start) }
