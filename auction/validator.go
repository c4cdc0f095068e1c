package auction

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// CapacityNamespace is the DHT key namespace of capacity records; register
// the validator under it with dht.NamespacedValidator.
const CapacityNamespace = "idlegrid-cap"

// MaxClockSkew is how far in the future a record's IssuedAtMs may lie
// before validators refuse it. Without it a provider with a fast clock
// could publish records nobody else considers current.
const MaxClockSkew = 5 * time.Minute

// CapacityKey is the DHT key of p's capacity record: "/idlegrid-cap/<peerID>".
func CapacityKey(p peer.ID) string {
	return "/" + CapacityNamespace + "/" + p.String()
}

// ParseCapacityKey returns the peer a capacity key belongs to.
func ParseCapacityKey(key string) (peer.ID, error) {
	rest, ok := strings.CutPrefix(key, "/"+CapacityNamespace+"/")
	if !ok {
		return "", fmt.Errorf("auction.ParseCapacityKey: %w: %q is not in namespace %q", ErrBadKey, key, CapacityNamespace)
	}
	id, err := peer.Decode(rest)
	if err != nil {
		return "", fmt.Errorf("auction.ParseCapacityKey: %w: %w", ErrBadKey, err)
	}
	// Only the canonical text form is accepted, so one peer has one key.
	if id.String() != rest {
		return "", fmt.Errorf("auction.ParseCapacityKey: %w: %q is not the canonical peer ID form", ErrBadKey, rest)
	}
	return id, nil
}

// CapacityValidator validates capacity records stored in the DHT. It has
// the method set of go-libp2p-record's Validator, so it can be passed to
// dht.NamespacedValidator(CapacityNamespace, v) without this package
// importing the DHT.
type CapacityValidator struct {
	// Now is the clock used for expiry; the DHT calls the validator on its
	// own goroutines, so Now must be safe for concurrent use.
	Now func() time.Time
}

// NewCapacityValidator returns a validator that reads time from now.
func NewCapacityValidator(now func() time.Time) CapacityValidator {
	if now == nil {
		panic("auction.NewCapacityValidator: nil clock")
	}
	return CapacityValidator{Now: now}
}

// Validate accepts value for key only if it is a well-formed capacity
// record, signed by the peer the key names, issued no later than
// now+MaxClockSkew and not expired at now.
func (v CapacityValidator) Validate(key string, value []byte) error {
	_, err := v.open(key, value)
	if err != nil {
		return fmt.Errorf("auction.CapacityValidator.Validate: %w", err)
	}
	return nil
}

func (v CapacityValidator) open(key string, value []byte) (*Capacity, error) {
	if v.Now == nil {
		return nil, errors.New("validator has no clock")
	}
	owner, err := ParseCapacityKey(key)
	if err != nil {
		return nil, err
	}
	c, signer, err := OpenCapacity(value)
	if err != nil {
		return nil, err
	}
	if signer != owner {
		return nil, fmt.Errorf("%w: key belongs to %s, signed by %s", ErrNotOwner, owner, signer)
	}
	if err := c.CheckTime(v.Now()); err != nil {
		return nil, err
	}
	return c, nil
}

// Select returns the index of the best valid value: the highest Seq, then
// the later IssuedAtMs, then the lexicographically greatest bytes, so every
// node picks the same record from the same set. Invalid values are skipped;
// it fails only if none is valid.
func (v CapacityValidator) Select(key string, values [][]byte) (int, error) {
	best := -1
	var bestCap *Capacity
	var firstErr error
	for i, raw := range values {
		c, err := v.open(key, raw)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if best < 0 || better(c, raw, bestCap, values[best]) {
			best, bestCap = i, c
		}
	}
	if best < 0 {
		if firstErr == nil {
			firstErr = errors.New("no values")
		}
		return 0, fmt.Errorf("auction.CapacityValidator.Select: no valid record: %w", firstErr)
	}
	return best, nil
}

func better(a *Capacity, araw []byte, b *Capacity, braw []byte) bool {
	if a.Seq != b.Seq {
		return a.Seq > b.Seq
	}
	if a.IssuedAtMs != b.IssuedAtMs {
		return a.IssuedAtMs > b.IssuedAtMs
	}
	return bytes.Compare(araw, braw) > 0
}
