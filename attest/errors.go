package attest

import (
	"errors"
	"fmt"
)

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
	// ErrOtherVersion: another release of the protocol wrote the record:
	// its signature verifies, but its payload version is not one this
	// build reads (newer, or older than any it still reads), or it has
	// fields this build does not know. It comes with ErrUnknownVersion or
	// ErrMalformed; see [FromOtherVersion] for what validators do with it.
	// It wraps errors.ErrUnsupported, which the layers that do not import
	// attest (p2p's DHT and stream guards) test for.
	ErrOtherVersion = fmt.Errorf("record of another protocol version: %w", errors.ErrUnsupported)
)
