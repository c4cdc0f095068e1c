// Package doctor checks what a provider needs to bid and run work, and says
// how to fix each thing it finds: the NVIDIA driver and NVML, GPU health,
// the Docker engine and the NVIDIA container runtime, disk space for the
// store and results, ports and reachability, the identity key's file
// permissions and the clock. Each check is a small function returning one
// Result with its fix text; a failed check that blocks bidding makes
// Blocking true (the CLI exits 1). Checks see the host only through Deps,
// so tests hand in fakes.
package doctor

import (
	"context"
	"time"
)

// Level is a check's outcome.
type Level string

const (
	OK   Level = "ok"
	Warn Level = "warn" // works, but costs money or reliability
	Fail Level = "fail"
	Skip Level = "skip" // not applicable here (renter, daemon not running)
)

// Result is one check's finding.
type Result struct {
	Check  string `json:"check"`
	Level  Level  `json:"level"`
	Detail string `json:"detail"`
	// Fix says what to do; empty when nothing is to be done.
	Fix string `json:"fix,omitempty"`
	// Blocks is true when this failure stops the provider from bidding.
	Blocks bool `json:"blocks,omitempty"`
}

// Check is one named check.
type Check struct {
	Name string
	Run  func(ctx context.Context) Result
}

// checkTimeout bounds one check, so a hung engine or driver cannot hang
// the doctor.
const checkTimeout = 10 * time.Second

// Run runs the checks in order; one failing does not stop the others.
func Run(ctx context.Context, checks []Check) []Result {
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		r := c.Run(cctx)
		cancel()
		r.Check = c.Name
		out = append(out, r)
	}
	return out
}

// Blocking reports whether any result blocks bidding.
func Blocking(rs []Result) bool {
	for _, r := range rs {
		if r.Level == Fail && r.Blocks {
			return true
		}
	}
	return false
}
