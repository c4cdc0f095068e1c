package attest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// ErrInvalid: a record decodes but breaks a structural rule. The wrapping
// text names the record kind and every offending field.
var ErrInvalid = errors.New("invalid record")

// Structural limits shared by the chain, voucher, receipt and fraud-proof
// records. They keep every record well inside its kind's size limit.
const (
	// MaxGPUs bounds the GPUs one fingerprint, telemetry window or job
	// event names (a host, not a cluster).
	MaxGPUs = 64
	// MaxXIDsPerGPU bounds the XID events one telemetry window lists for one
	// GPU; later ones are only counted (GPUTelemetry.XIDOverflow).
	MaxXIDsPerGPU = 32
	// MaxTextLen bounds free-text identifiers (UUIDs, names, versions).
	MaxTextLen = 128
	// MaxWindowMs bounds one telemetry window (10 minutes).
	MaxWindowMs = 10 * 60 * 1000
	// maxCIDHashLen bounds the multihash of job and output CIDs.
	maxCIDHashLen = 80
)

// problems collects structural problems, each prefixed with its field path.
type problems struct{ list []string }

func (p *problems) addf(path, format string, args ...any) {
	const maxReported = 20
	if len(p.list) < maxReported {
		p.list = append(p.list, path+": "+fmt.Sprintf(format, args...))
	}
}

// err returns nil or one error wrapping ErrInvalid that names the kind.
func (p *problems) err(kind string) error {
	if len(p.list) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalid, kind, strings.Join(p.list, "; "))
}

func checkVersion(p *problems, v uint) {
	if v != RecordsVersion {
		p.addf("v", "version %d, want %d", v, RecordsVersion)
	}
}

// checkPeer accepts a peer ID in its canonical text form only: owner checks
// compare text, so one peer must have exactly one spelling.
func checkPeer(p *problems, path, s string) {
	if s == "" {
		p.addf(path, "missing peer ID")
		return
	}
	if _, ok := canonicalPeer(s); ok {
		return
	}
	id, err := peer.Decode(s)
	switch {
	case err != nil:
		p.addf(path, "%q is not a peer ID", s)
	case id.String() != s:
		p.addf(path, "%q is not the canonical peer ID form %q", s, id)
	}
}

// checkRecordID accepts only what RecordID produces (CIDv1, raw codec,
// sha2-256) in its canonical text form.
func checkRecordID(p *problems, path, s string) {
	if s == "" {
		p.addf(path, "missing record ID")
		return
	}
	if !isRecordID(s) {
		p.addf(path, "%q is not a record ID (canonical CIDv1, raw codec, sha2-256)", s)
	}
}

func isRecordID(s string) bool {
	if isRecordIDFast(s) {
		return true
	}
	c, err := cid.Decode(s)
	if err != nil || c.Version() != 1 || c.Type() != cid.Raw {
		return false
	}
	dh, err := mh.Decode(c.Hash())
	return err == nil && dh.Code == mh.SHA2_256 && dh.Length == 32 && c.String() == s
}

// checkContentID accepts any CID of bounded hash length in canonical text
// form (job spec and output CIDs).
func checkContentID(p *problems, path, s string) {
	if s == "" {
		p.addf(path, "missing CID")
		return
	}
	c, err := cid.Decode(s)
	switch {
	case err != nil:
		p.addf(path, "%q is not a CID", s)
	case len(c.Hash()) > maxCIDHashLen:
		p.addf(path, "CID hash is %d bytes, at most %d", len(c.Hash()), maxCIDHashLen)
	case c.String() != s:
		p.addf(path, "%q is not the canonical CID form %q", s, c)
	}
}

func checkText(p *problems, path, s string, required bool) {
	switch {
	case s == "" && required:
		p.addf(path, "missing")
	case !printable(s, MaxTextLen):
		p.addf(path, "must be at most %d printable ASCII characters", MaxTextLen)
	}
}

func checkPositiveMs(p *problems, path string, ms int64) {
	if ms <= 0 {
		p.addf(path, "must be positive Unix milliseconds")
	}
}

// checkUUIDs checks a set of GPU UUIDs: at most MaxGPUs, each non-empty
// printable text, no duplicates.
func checkUUIDs(p *problems, path string, ids []string, min int) {
	if len(ids) < min || len(ids) > MaxGPUs {
		p.addf(path, "%d entries, want %d..%d", len(ids), min, MaxGPUs)
		return
	}
	for i, id := range ids {
		// ids[:i] are the ones seen so far; at most MaxGPUs, so a scan
		// beats a map.
		dup := slices.Contains(ids[:i], id)
		if id != "" && printable(id, MaxTextLen) && !dup {
			continue // nothing to report: spare building the path
		}
		checkText(p, fmt.Sprintf("%s[%d]", path, i), id, true)
		if dup {
			p.addf(fmt.Sprintf("%s[%d]", path, i), "duplicate %q", id)
		}
	}
}

func printable(s string, maxLen int) bool {
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

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
