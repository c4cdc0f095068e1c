package jobproto

import (
	"errors"
	"fmt"

	"github.com/idlegrid/idlegrid/attest"
)

// Version is the message version this package speaks.
const Version = 1

// Size limits. A request names a lease and a few numbers; a header carries
// at most a job spec (64 KiB) plus small fields; data frames are fixed.
const (
	MaxRequestBytes = 4 << 10
	MaxHeaderBytes  = 80 << 10
	// DataFrameBytes is the size of a full data frame; the last may be
	// shorter.
	DataFrameBytes = 256 << 10
	// MaxFrameBytes bounds any frame a reader accepts.
	MaxFrameBytes = MaxHeaderBytes + DataFrameBytes
)

// Operations.
const (
	// OpSpec (provider → renter): the job spec of a lease.
	OpSpec = "spec"
	// OpArtifact (provider → renter): the bytes of an artifact the job
	// names (a WASM module), from Offset.
	OpArtifact = "artifact"
	// OpStatus (renter → provider): the lease's state once its version
	// exceeds After, waiting up to WaitMs for a change.
	OpStatus = "status"
	// OpLogs (renter → provider): the workload's log from Offset, and with
	// Follow everything it writes until it ends.
	OpLogs = "logs"
	// OpResult (renter → provider): the output tar from Offset.
	OpResult = "result"
	// OpCancel (renter → provider): stop the workload; the header is the
	// lease's status after the request was recorded.
	OpCancel = "cancel"
	// OpAttest (renter → provider): the provider's signed chain entries
	// that concern the lease, from chain seq After, one raw entry per data
	// frame; with Follow, new ones as they are appended, until the lease
	// ends.
	OpAttest = "attest"
	// OpVoucher (renter → provider): a signed voucher for the lease
	// (Voucher); the header is the lease's status.
	OpVoucher = "voucher"
	// OpReceipt (renter → provider): the provider's signed receipt of an
	// ended lease, in Header.Receipt.
	OpReceipt = "receipt"
)

// MaxVoucherBytes bounds the voucher a request carries.
const MaxVoucherBytes = 2 << 10

// MaxWaitMs caps a status request's wait.
const MaxWaitMs = 60_000

// Request is the one message a client sends.
type Request struct {
	V      uint   `cbor:"v"`
	Op     string `cbor:"op"`
	Lease  string `cbor:"lease"`
	CID    string `cbor:"cid,omitempty"`    // OpArtifact
	Offset int64  `cbor:"offset,omitempty"` // OpArtifact, OpLogs, OpResult
	Follow bool   `cbor:"follow,omitempty"` // OpLogs
	After  uint64 `cbor:"after,omitempty"`  // OpStatus
	WaitMs uint32 `cbor:"wait_ms,omitempty"`
	// Voucher is a sealed voucher (OpVoucher).
	Voucher []byte `cbor:"voucher,omitempty"`
}

// Validate checks a request's shape (not whether the lease exists).
func (r *Request) Validate() error {
	if r.V != Version {
		return fmt.Errorf("%w: version %d", ErrInvalid, r.V)
	}
	if r.Lease == "" || len(r.Lease) > 128 {
		return fmt.Errorf("%w: lease id of %d bytes", ErrInvalid, len(r.Lease))
	}
	if r.Offset < 0 {
		return fmt.Errorf("%w: negative offset", ErrInvalid)
	}
	if r.WaitMs > MaxWaitMs {
		return fmt.Errorf("%w: wait_ms %d over %d", ErrInvalid, r.WaitMs, MaxWaitMs)
	}
	switch r.Op {
	case OpArtifact:
		if r.CID == "" || len(r.CID) > 128 {
			return fmt.Errorf("%w: artifact request without a cid", ErrInvalid)
		}
	case OpVoucher:
		if len(r.Voucher) == 0 || len(r.Voucher) > MaxVoucherBytes {
			return fmt.Errorf("%w: voucher of %d bytes", ErrInvalid, len(r.Voucher))
		}
	case OpSpec, OpStatus, OpLogs, OpResult, OpCancel, OpAttest, OpReceipt:
	default:
		return fmt.Errorf("%w: unknown op %q", ErrInvalid, r.Op)
	}
	return nil
}

// Status is where a lease's work stands, as its provider records it.
type Status struct {
	// Version grows with every change, for long-polling.
	Version  uint64 `cbor:"version"`
	State    string `cbor:"state"`
	Reason   string `cbor:"reason,omitempty"`
	ExitCode *int   `cbor:"exit_code,omitempty"`
	// StartedMs and FinishedMs are the workload's, when known.
	StartedMs  int64  `cbor:"started_ms,omitempty"`
	FinishedMs int64  `cbor:"finished_ms,omitempty"`
	OutputCID  string `cbor:"output_cid,omitempty"`
	OutputSize int64  `cbor:"output_size,omitempty"`
	LogBytes   int64  `cbor:"log_bytes,omitempty"`
	// Health is a service's health verdict: starting, healthy or
	// unhealthy; empty for batch work.
	Health string `cbor:"health,omitempty"`
}

// Header opens every response. A refused request has Error set and no
// other frame follows.
type Header struct {
	V     uint   `cbor:"v"`
	Error string `cbor:"error,omitempty"`
	// Code classifies Error for the client (see the Code constants).
	Code   string  `cbor:"code,omitempty"`
	Spec   []byte  `cbor:"spec,omitempty"`   // OpSpec
	Status *Status `cbor:"status,omitempty"` // OpStatus, OpCancel
	// Size is the total length of the bytes that follow from Offset
	// (OpArtifact, OpResult); CID names them.
	Size int64  `cbor:"size,omitempty"`
	CID  string `cbor:"cid,omitempty"`
	// Receipt is the provider's sealed receipt (OpReceipt).
	Receipt []byte `cbor:"receipt,omitempty"`
}

// Error codes.
const (
	CodeNotFound  = "not_found" // unknown lease, or not this peer's
	CodeNotReady  = "not_ready" // the result does not exist yet
	CodeGone      = "gone"      // the provider no longer keeps it
	CodeInvalid   = "invalid"   // a malformed request
	CodeForbidden = "forbidden" // the peer is not the lease's party
	CodeInternal  = "internal"  // the serving side failed
)

// Errors.
var (
	// ErrInvalid wraps every decoding and validation failure.
	ErrInvalid = errors.New("jobproto: invalid message")
)

// RemoteError is a refusal reported in a Header.
type RemoteError struct {
	Code    string
	Message string
}

func (e *RemoteError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }

// Err returns the header's refusal as an error, or nil.
func (h *Header) Err() error {
	if h.Error == "" {
		return nil
	}
	return &RemoteError{Code: h.Code, Message: h.Error}
}

// EncodeRequest validates and encodes r.
func EncodeRequest(r *Request) ([]byte, error) {
	r.V = Version
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := attest.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("jobproto: encode request: %w", err)
	}
	if len(b) > MaxRequestBytes {
		return nil, fmt.Errorf("%w: request of %d bytes", ErrInvalid, len(b))
	}
	return b, nil
}

// DecodeRequest decodes and validates a request from an untrusted peer.
func DecodeRequest(b []byte) (*Request, error) {
	if len(b) > MaxRequestBytes {
		return nil, fmt.Errorf("%w: request of %d bytes over %d", ErrInvalid, len(b), MaxRequestBytes)
	}
	var r Request
	if err := attest.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// EncodeHeader encodes h.
func EncodeHeader(h *Header) ([]byte, error) {
	h.V = Version
	b, err := attest.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("jobproto: encode header: %w", err)
	}
	if len(b) > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrInvalid, len(b))
	}
	return b, nil
}

// DecodeHeader decodes a header from an untrusted peer.
func DecodeHeader(b []byte) (*Header, error) {
	if len(b) > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: header of %d bytes over %d", ErrInvalid, len(b), MaxHeaderBytes)
	}
	var h Header
	if err := attest.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if h.V != Version {
		return nil, fmt.Errorf("%w: version %d", ErrInvalid, h.V)
	}
	if h.Size < 0 {
		return nil, fmt.Errorf("%w: negative size", ErrInvalid)
	}
	if h.Status != nil && (len(h.Status.State) == 0 || len(h.Status.State) > 32) {
		return nil, fmt.Errorf("%w: status state %q", ErrInvalid, h.Status.State)
	}
	return &h, nil
}
