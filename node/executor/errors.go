package executor

import "errors"

// Errors returned by executors and the helpers in this package. Callers
// match them with errors.Is; they are always wrapped with the failing
// operation.
var (
	// ErrUnknownHandle is returned for a handle the executor does not track
	// (never prepared, or already removed).
	ErrUnknownHandle = errors.New("unknown handle")
	// ErrInvalidSpec is returned by Prepare for a spec that fails Validate.
	ErrInvalidSpec = errors.New("invalid spec")
	// ErrUnsupported is returned by Prepare for a spec the executor cannot
	// honour (GPUs on the wasm executor, an unknown runtime).
	ErrUnsupported = errors.New("unsupported by executor")
	// ErrLimit is returned by Prepare when a spec's limits exceed what the
	// executor was configured to give one workload.
	ErrLimit = errors.New("over executor limit")
	// ErrState is returned for a call that does not fit the workload's state:
	// Start twice, Outputs before the workload finished.
	ErrState = errors.New("wrong workload state")
	// ErrStopTimeout is returned by Stop when the workload did not finish
	// within the grace period.
	ErrStopTimeout = errors.New("workload did not stop within grace")
	// ErrClosed is returned by an executor after Close.
	ErrClosed = errors.New("executor closed")

	// ErrInvalidCID is returned for a CID that does not parse or is not a
	// CIDv1 raw sha2-256 CID.
	ErrInvalidCID = errors.New("invalid cid")
	// ErrCIDMismatch is returned when bytes do not hash to the CID they were
	// fetched or stored under.
	ErrCIDMismatch = errors.New("content does not match cid")
	// ErrNotFound is returned by an Artifacts store that does not hold a CID.
	ErrNotFound = errors.New("artifact not found")
	// ErrTooLarge is returned when an artifact or an output exceeds its size cap.
	ErrTooLarge = errors.New("too large")
)
