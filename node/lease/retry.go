package lease

import (
	"errors"

	"github.com/idlegrid/idlegrid/node/jobproto"
)

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Permanent marks err as one that retrying cannot fix (the peer sent
// something other than what the lease names).
func Permanent(err error) error { return permanentError{err} }

// Final reports whether retrying a job-protocol call that failed with err
// is pointless: the failure is permanent, or the peer refused (a remote
// error is the peer's considered answer, not a broken stream).
func Final(err error) bool {
	var pe permanentError
	var re *jobproto.RemoteError
	return errors.As(err, &pe) || errors.As(err, &re)
}
