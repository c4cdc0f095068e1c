package attest

import "errors"

// Sentinel errors returned (wrapped, with context) by [Open] and [Seal].
// Callers branch on them with errors.Is; the wrapping text says which record
// kind and which check failed.
var (
	// ErrTooLarge: the raw record exceeds the caller's size limit. It is
	// reported before any byte is parsed.
	ErrTooLarge = errors.New("record too large")
	// ErrBadSignature: the envelope's signature does not verify under the
	// kind's domain.
	ErrBadSignature = errors.New("bad signature")
	// ErrWrongDomain: the envelope belongs to another record kind (its
	// payload type is not the one expected).
	ErrWrongDomain = errors.New("wrong record domain")
	// ErrUnknownVersion: the payload carries a version this build does not
	// understand, or none.
	ErrUnknownVersion = errors.New("unknown record version")
	// ErrMalformed: the envelope or payload cannot be parsed, is not in
	// canonical form, or breaks a decoder limit.
	ErrMalformed = errors.New("malformed record")
)
