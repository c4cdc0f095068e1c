package attest

import (
	"fmt"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// The field checks below are shared by attest's records and by auction's
// messages and capacity records (auction imports attest, never the
// reverse), so that a peer ID, record ID or CID is held to one rule and
// reported in one wording wherever it appears on the wire.

// MaxCIDHashLen bounds the multihash of a content CID (job specs, outputs,
// modules, datasets): kad-dht refuses longer provider keys.
const MaxCIDHashLen = 80

// maxReported bounds the problems one error lists.
const maxReported = 20

// Problems collects the structural problems of one record, message or
// config, each prefixed with its field path, so that one error names all
// of them instead of one per attempt. The zero value is ready to use.
type Problems struct{ list []string }

// Addf records a problem with the field at path (at most 20 are kept).
func (p *Problems) Addf(path, format string, args ...any) {
	if len(p.list) < maxReported {
		p.list = append(p.list, path+": "+fmt.Sprintf(format, args...))
	}
}

// List returns a copy of the problems recorded, in order.
func (p *Problems) List() []string { return append([]string(nil), p.list...) }

// Err returns nil when nothing was recorded, else one error wrapping
// sentinel that names kind (when not empty) and lists every problem.
func (p *Problems) Err(sentinel error, kind string) error {
	if len(p.list) == 0 {
		return nil
	}
	if kind == "" {
		return fmt.Errorf("%w: %s", sentinel, strings.Join(p.list, "; "))
	}
	return fmt.Errorf("%w: %s: %s", sentinel, kind, strings.Join(p.list, "; "))
}

// CheckPeerID accepts a peer ID in its canonical text form only: owner
// checks compare text, so one peer must have exactly one spelling.
func CheckPeerID(p *Problems, path, s string) {
	if s == "" {
		p.Addf(path, "missing peer ID")
		return
	}
	if _, ok := canonicalPeer(s); ok {
		return
	}
	id, err := peer.Decode(s)
	switch {
	case err != nil:
		p.Addf(path, "%q is not a peer ID", s)
	case id.String() != s:
		p.Addf(path, "%q is not the canonical peer ID form %q", s, id)
	}
}

// CheckRecordID accepts only what RecordID produces (CIDv1, raw codec,
// sha2-256) in its canonical text form: peers match records by these
// strings, so one record must have exactly one spelling.
func CheckRecordID(p *Problems, path, s string) {
	if s == "" {
		p.Addf(path, "missing record ID")
		return
	}
	if isRecordIDFast(s) {
		return
	}
	c, err := cid.Decode(s)
	if err != nil {
		p.Addf(path, "%q is not a CID", s)
		return
	}
	dh, err := mh.Decode(c.Hash())
	switch {
	case err != nil || c.Version() != 1 || c.Type() != cid.Raw || dh.Code != mh.SHA2_256 || dh.Length != 32:
		p.Addf(path, "%q is not a record ID (CIDv1, raw codec, sha2-256)", s)
	case c.String() != s:
		p.Addf(path, "%q is not the canonical CID form %q", s, c)
	}
}

// CheckContentID accepts any CID of at most MaxCIDHashLen hash bytes in
// its canonical text form (job spec, output and module CIDs).
func CheckContentID(p *Problems, path, s string) {
	if s == "" {
		p.Addf(path, "missing CID")
		return
	}
	c, err := cid.Decode(s)
	switch {
	case err != nil:
		p.Addf(path, "%q is not a CID", s)
	case len(c.Hash()) > MaxCIDHashLen:
		p.Addf(path, "CID hash is %d bytes, at most %d", len(c.Hash()), MaxCIDHashLen)
	case c.String() != s:
		p.Addf(path, "%q is not the canonical CID form %q", s, c)
	}
}

// Printable reports whether s is at most maxLen bytes of printable ASCII.
func Printable(s string, maxLen int) bool {
	if len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// IsLowerHex reports whether s holds only lower-case hex digits.
func IsLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
