package auction

import "errors"

// Sentinel errors of the capacity API; they are returned wrapped with the
// operation and the offending field. Codec failures wrap the attest
// sentinels (attest.ErrTooLarge, attest.ErrBadSignature, ...) instead.
var (
	// ErrInvalidCapacity: the record decodes but breaks a structural rule.
	ErrInvalidCapacity = errors.New("invalid capacity record")
	// ErrNotOwner: the record was not signed by the peer it describes or
	// whose DHT key it is stored under.
	ErrNotOwner = errors.New("record not signed by key owner")
	// ErrExpired: the record's expiry is not after the validator's now.
	ErrExpired = errors.New("record expired")
	// ErrNotYetValid: the record claims to be issued further in the future
	// than the allowed clock skew.
	ErrNotYetValid = errors.New("record issued in the future")
	// ErrBadKey: a DHT key is not a capacity key.
	ErrBadKey = errors.New("bad capacity key")
)
