package auction

import (
	"fmt"
	"strings"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
)

// Models a job serves. A spec may name the model its service loads
// (`model:`, `model_size:`); providers list the models they hold on disk
// in their capacity records (Capacity.Models), and the matcher charges a
// provider without it the time it needs to download it (cold_start.go).
// Only the ID and the size travel; the weights never do.

// Model limits.
const (
	// MaxHeldModels bounds Capacity.Models: a record stays a small DHT
	// value, and a renter's check of one bid a short scan.
	MaxHeldModels = 32
	// MaxModelIDLen bounds a model ID: a CID with an 80-byte hash in
	// base32, or a name of MaxModelNameLen and a sha256 digest, fit.
	MaxModelIDLen = 160
	// MaxModelNameLen bounds the name part of NAME@sha256:<hex>.
	MaxModelNameLen = 64
	// MaxModelSizeMiB bounds a model's size: 16 TiB.
	MaxModelSizeMiB = 16 << 20
)

// ModelRef names the model a job serves: its ID (ParseModelID's canonical
// form) and its size, which prices the download a provider without it
// needs before the job can serve.
type ModelRef struct {
	ID      string `cbor:"id"`
	SizeMiB uint64 `cbor:"size_mib"`
}

// ParseModelID returns the canonical form of a model ID, or why s is not
// one. A model ID is either a content ID of the weights (any CID whose
// hash is at most 80 bytes; canonical: its string form) or
// NAME@sha256:<64 hex>, a name of 1..MaxModelNameLen letters, digits and
// '.', '_', '-' starting with a letter or digit, with the sha256 digest of
// the weights (canonical: lower case). The digest, not the name, is what
// makes two providers' copies the same model.
func ParseModelID(s string) (string, error) {
	if len(s) > MaxModelIDLen {
		return "", fmt.Errorf("model ID is %d characters, at most %d", len(s), MaxModelIDLen)
	}
	name, digest, named := strings.Cut(s, "@")
	if !named {
		c, err := cid.Decode(s)
		switch {
		case err != nil:
			return "", fmt.Errorf("%q is neither a CID nor NAME@sha256:<64 hex>", s)
		case len(c.Hash()) > attest.MaxCIDHashLen:
			return "", fmt.Errorf("%q has a hash longer than %d bytes", s, attest.MaxCIDHashLen)
		}
		return c.String(), nil
	}
	name = strings.ToLower(name)
	if !validModelName(name) {
		return "", fmt.Errorf("model name %q must be 1..%d letters, digits, '.', '_' or '-', starting with a letter or digit", name, MaxModelNameLen)
	}
	hex, ok := strings.CutPrefix(strings.ToLower(digest), "sha256:")
	if !ok || len(hex) != 64 || !attest.IsLowerHex(hex) {
		return "", fmt.Errorf("model %q: the digest must be sha256:<64 hex> (the weights' hash), got %q", s, digest)
	}
	return name + "@sha256:" + hex, nil
}

// IsModelID reports whether s is a model ID in canonical form, as records
// and RFQs carry it.
func IsModelID(s string) bool {
	c, err := ParseModelID(s)
	return err == nil && c == s
}

func validModelName(s string) bool {
	if s == "" || len(s) > MaxModelNameLen || s[0] == '.' || s[0] == '_' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// validate reports what is wrong with m under path ("model").
func (m *ModelRef) validate(p *problems, path string) {
	if m == nil {
		return
	}
	if !IsModelID(m.ID) {
		p.Addf(path+".id", "%q is not a model ID in canonical form (a CID, or name@sha256:<64 lower-case hex>)", m.ID)
	}
	if m.SizeMiB == 0 || m.SizeMiB > MaxModelSizeMiB {
		p.Addf(path+".size_mib", "%d out of range 1..%d", m.SizeMiB, MaxModelSizeMiB)
	}
}

// Holds reports whether the record lists model id among the models on
// the provider's disk.
func (c *Capacity) Holds(id string) bool {
	for _, m := range c.Models {
		if m == id {
			return true
		}
	}
	return false
}
