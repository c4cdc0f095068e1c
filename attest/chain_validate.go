package attest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrNotOwner: a record is signed by a key other than the peer it names as
// its author.
var ErrNotOwner = errors.New("signer is not the named author")

// Validate checks the entry's structure without a clock: version, IDs,
// links (Prev empty iff Seq is 0), exactly one body of the named kind, and
// each body's fields. Plausibility of measured values (ranges, energy) is
// the verifier's job, so that a lying entry is reported by a named check
// rather than refused as malformed.
func (e *Entry) Validate() error {
	var p Problems
	switch e.V {
	case RecordsVersion:
		if j := e.Job; j != nil && (j.Artifact != "" || j.Run != nil) {
			p.Addf("job", "artifact and run need entry version %d", RunEntryVersion)
		}
	case RunEntryVersion:
		if e.Job == nil || e.Job.Artifact == "" || e.Job.Run == nil {
			p.Addf("v", "version %d is for job events with an artifact and run settings", RunEntryVersion)
		}
	default:
		p.Addf("v", "version %d, want %d or %d", e.V, RecordsVersion, RunEntryVersion)
	}
	CheckPeerID(&p, "provider", e.Provider)
	switch {
	case e.Seq == 0 && e.Prev != "":
		p.Addf("prev", "must be empty for seq 0")
	case e.Seq > 0:
		CheckRecordID(&p, "prev", e.Prev)
	}
	checkPositiveMs(&p, "at_ms", e.AtMs)
	n := 0
	for _, set := range []bool{e.Fingerprint != nil, e.Telemetry != nil, e.Job != nil} {
		if set {
			n++
		}
	}
	switch b := e.Body(); {
	case n != 1:
		p.Addf("kind", "%d bodies set, want exactly 1", n)
	case b.EntryKind() != e.Kind:
		p.Addf("kind", "%q but the body is %q", e.Kind, b.EntryKind())
	default:
		switch b := b.(type) {
		case *Fingerprint:
			b.validate(&p)
		case *Telemetry:
			b.validate(&p)
		case *JobEvent:
			b.validate(&p)
		}
	}
	return p.Err(ErrInvalid, ChainEntryKind.Name)
}

func (f *Fingerprint) validate(p *Problems) {
	checkText(p, "fingerprint.driver", f.Driver, true)
	checkText(p, "fingerprint.cuda", f.CUDA, true)
	if f.HostHash != "" && (len(f.HostHash) != 64 || !IsLowerHex(f.HostHash)) {
		p.Addf("fingerprint.host_hash", "must be 64 lower-case hex digits")
	}
	uuids := make([]string, len(f.GPUs))
	for i, g := range f.GPUs {
		uuids[i] = g.UUID
		path := fmt.Sprintf("fingerprint.gpus[%d]", i)
		checkText(p, path+".name", g.Name, true)
		checkText(p, path+".serial", g.Serial, false)
		checkText(p, path+".pci_bus", g.PCIBusID, false)
		checkText(p, path+".vbios", g.VBIOS, false)
		if g.MemoryMiB == 0 {
			p.Addf(path+".mem_mib", "must be positive")
		}
		if !validComputeCap(g.ComputeCap) {
			p.Addf(path+".cc", "%q is not major.minor", g.ComputeCap)
		}
		if g.PowerLimitMW == 0 || g.PowerLimitMW > absurdPowerMW {
			p.Addf(path+".power_limit_mw", "%d out of range 1..%d", g.PowerLimitMW, absurdPowerMW)
		}
	}
	checkUUIDs(p, "fingerprint.gpus", uuids, 1)
}

func validComputeCap(s string) bool {
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.ParseUint(maj, 10, 8)
	b, err2 := strconv.ParseUint(min, 10, 8)
	return ok && err1 == nil && err2 == nil && strconv.FormatUint(a, 10)+"."+strconv.FormatUint(b, 10) == s
}

func (t *Telemetry) validate(p *Problems) {
	checkPositiveMs(p, "telemetry.start_ms", t.StartMs)
	switch {
	case t.EndMs <= t.StartMs:
		p.Addf("telemetry.end_ms", "must be after start_ms")
	case t.EndMs-t.StartMs > MaxWindowMs:
		p.Addf("telemetry.end_ms", "window of %d ms exceeds %d", t.EndMs-t.StartMs, MaxWindowMs)
	}
	CheckRecordID(p, "telemetry.fingerprint", t.Fingerprint)
	uuids := make([]string, len(t.GPUs))
	// A window's GPUs mostly share one lease: remember the last lease and
	// renter pair found valid rather than checking it once per GPU.
	var okLease, okRenter string
	for i, g := range t.GPUs {
		uuids[i] = g.UUID
		if g.Samples != 0 && len(g.XIDs) <= MaxXIDsPerGPU && (g.Lease == "" && g.Renter == "" ||
			g.Lease != "" && (g.Lease == okLease && g.Renter == okRenter || isRecordID(g.Lease) && isCanonicalPeer(g.Renter))) {
			if g.Lease != "" {
				okLease, okRenter = g.Lease, g.Renter
			}
			// nothing to report: spare building the path
			continue
		}
		path := fmt.Sprintf("telemetry.gpus[%d]", i)
		if g.Samples == 0 {
			p.Addf(path+".samples", "must be at least 1")
		}
		if len(g.XIDs) > MaxXIDsPerGPU {
			p.Addf(path+".xids", "%d entries, at most %d", len(g.XIDs), MaxXIDsPerGPU)
		}
		switch {
		case g.Lease == "" && g.Renter != "":
			p.Addf(path+".renter", "set without a lease")
		case g.Lease != "":
			CheckRecordID(p, path+".lease", g.Lease)
			CheckPeerID(p, path+".renter", g.Renter)
		}
	}
	checkUUIDs(p, "telemetry.gpus", uuids, 1)
}

func (j *JobEvent) validate(p *Problems) {
	CheckRecordID(p, "job.lease", j.Lease)
	CheckPeerID(p, "job.renter", j.Renter)
	CheckContentID(p, "job.job", j.Job)
	if j.Event != JobStarted && !j.Event.Ends() {
		p.Addf("job.event", "%q is not started, finished, preempted, cancelled or failed", j.Event)
	}
	checkUUIDs(p, "job.gpus", j.GPUs, 0)
	if j.Output != "" {
		CheckContentID(p, "job.output", j.Output)
	}
	if j.Event == JobStarted && (j.ExitCode != 0 || j.Output != "") {
		p.Addf("job", "exit_code and output are only for ended jobs")
	}
	if j.Artifact != "" && !IsArtifact(j.Artifact) {
		p.Addf("job.artifact", "must be a content ID or sha256:<64 lower-case hex>")
	}
	if r := j.Run; r != nil {
		checkText(p, "job.run.runtime", r.Runtime, true)
		if r.Network != "none" && r.Network != "egress" {
			p.Addf("job.run.network", "%q is not none or egress", r.Network)
		}
	}
}

// IsArtifact reports whether s addresses what a job ran: a content ID (a
// WASM module) or a container image ID, "sha256:" and 64 lower-case hex.
func IsArtifact(s string) bool {
	if hex, ok := strings.CutPrefix(s, "sha256:"); ok {
		return len(hex) == 64 && IsLowerHex(hex)
	}
	var p Problems
	CheckContentID(&p, "", s)
	return len(p.list) == 0
}

// OpenEntry verifies and decodes one chain entry (at most MaxEntrySize
// bytes): envelope, domain, signature, canonical payload, structure, and
// that the signer is the entry's provider. Continuity and plausibility are
// [Verify]'s checks.
func OpenEntry(raw []byte) (*Entry, error) {
	e, signer, err := Open[Entry](raw, MaxEntrySize)
	if err != nil {
		return nil, fmt.Errorf("attest.OpenEntry: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("attest.OpenEntry: %w", err)
	}
	if err := checkOwner(signer, e.Provider); err != nil {
		return nil, fmt.Errorf("attest.OpenEntry: %w", err)
	}
	return e, nil
}

func checkOwner(signer peer.ID, named string) error {
	// When named is a known canonical peer ID text, comparing IDs is
	// comparing texts (String is one-to-one) without the base58 encode.
	if id, ok := canonicalPeerCached(named); ok {
		if id == signer {
			return nil
		}
		return fmt.Errorf("%w: signed by %s, record names %s", ErrNotOwner, signer, named)
	}
	if signer.String() != named {
		return fmt.Errorf("%w: signed by %s, record names %s", ErrNotOwner, signer, named)
	}
	return nil
}
