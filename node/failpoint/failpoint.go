// Package failpoint kills the process at named points of the payment
// protocol, so the crash tests of the real binary can kill -9 a daemon at
// an exact point (between storing a voucher and sending it, between a
// lease's end and its receipt) rather than wherever a signal happens to
// land.
//
// IDLEGRID_FAILPOINT=NAME[:N], read once at start, makes the N-th Hit(NAME)
// (default the first) send SIGKILL to the process itself. Unset, as in any
// real deployment, Hit is a comparison against an empty name.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the variable that arms a failpoint.
const Env = "IDLEGRID_FAILPOINT"

// The points, named after what has just happened when the process dies.
const (
	// RenterVoucherStored: the renter stored a signed voucher and has
	// not sent it.
	RenterVoucherStored = "renter-voucher-stored"
	// ProviderVoucherStored: the provider stored a renter's voucher and
	// has not acknowledged it.
	ProviderVoucherStored = "provider-voucher-stored"
	// ProviderLeaseEnded: the provider recorded a lease's end and has not
	// issued its receipt.
	ProviderLeaseEnded = "provider-lease-ended"
)

var (
	armed string
	after int64 // hits before the one that kills
	hits  atomic.Int64
)

func init() { arm(os.Getenv(Env)) }

func arm(spec string) {
	name, n, _ := strings.Cut(spec, ":")
	armed, after = name, 0
	hits.Store(0)
	if k, err := strconv.ParseInt(n, 10, 64); err == nil && k > 1 {
		after = k - 1
	}
}

// Hit kills the process if name is the armed failpoint and this is its
// N-th hit.
func Hit(name string) {
	if armed == "" || name != armed {
		return
	}
	if hits.Add(1) > after {
		// SIGKILL on Unix, TerminateProcess on Windows: no deferred
		// function or shutdown path runs.
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // the signal is on its way; nothing more may happen
	}
}

// hitCount is for the package's tests.
func hitCount() int64 { return hits.Load() }
