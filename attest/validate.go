package attest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"
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
)

func checkVersion(p *Problems, v uint) {
	if v != RecordsVersion {
		p.Addf("v", "version %d, want %d", v, RecordsVersion)
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

func checkText(p *Problems, path, s string, required bool) {
	switch {
	case s == "" && required:
		p.Addf(path, "missing")
	case !Printable(s, MaxTextLen):
		p.Addf(path, "must be at most %d printable ASCII characters", MaxTextLen)
	}
}

func checkPositiveMs(p *Problems, path string, ms int64) {
	if ms <= 0 {
		p.Addf(path, "must be positive Unix milliseconds")
	}
}

// checkUUIDs checks a set of GPU UUIDs: at most MaxGPUs, each non-empty
// printable text, no duplicates.
func checkUUIDs(p *Problems, path string, ids []string, min int) {
	if len(ids) < min || len(ids) > MaxGPUs {
		p.Addf(path, "%d entries, want %d..%d", len(ids), min, MaxGPUs)
		return
	}
	for i, id := range ids {
		// ids[:i] are the ones seen so far; at most MaxGPUs, so a scan
		// beats a map.
		dup := slices.Contains(ids[:i], id)
		if id != "" && Printable(id, MaxTextLen) && !dup {
			continue // nothing to report: spare building the path
		}
		checkText(p, fmt.Sprintf("%s[%d]", path, i), id, true)
		if dup {
			p.Addf(fmt.Sprintf("%s[%d]", path, i), "duplicate %q", id)
		}
	}
}
