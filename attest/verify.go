package attest

import (
	"fmt"
	"strings"
)

// Verifier check names, in the order Verify runs them. Each [Finding] names
// the check that produced it.
const (
	// CheckSignature: envelope domain and signature, strict canonical
	// decoding, structure, signer == provider == the segment's provider.
	CheckSignature = "signature"
	// CheckContinuity: seq +1 and prev = ID of the previous entry; gaps,
	// duplicates and forks are named.
	CheckContinuity = "continuity"
	// CheckTime: at_ms monotonic and not beyond opts.NowMs + skew; each
	// telemetry window ends by its entry's at_ms, windows do not overlap,
	// XIDs fall inside their window.
	CheckTime = "time"
	// CheckFingerprint: telemetry names the fingerprint in force and only
	// its GPUs; a new fingerprint does not move a UUID to other hardware.
	CheckFingerprint = "fingerprint"
	// CheckUUIDClash: no GPU UUID the provider reports is known to belong
	// to another provider (opts.KnownUUIDs).
	CheckUUIDClash = "uuid-clash"
	// CheckRanges: utilization 0..100% and min <= avg <= max, power <=
	// 1.05 x the limit, memory <= total, temperature plausible.
	CheckRanges = "ranges"
	// CheckEnergy: the energy counter delta is within the tolerance of
	// average power x the time it covers.
	CheckEnergy = "energy"
	// CheckLoadPower: high utilization needs more than idle power (the
	// "load without power" cheat, whose energy is consistent with its
	// power). A heuristic, not proof: see DefaultLoadPowerMinPct.
	CheckLoadPower = "load-power"
	// CheckHealth: no hardware XIDs (48, 63, 64, 74, 79, 94, 95) and no
	// uncorrectable ECC errors.
	CheckHealth = "health"
	// CheckCoverage: telemetry attributes the lease's GPUs to the lease
	// from its start to its end with no gap over opts.MaxGapMs.
	CheckCoverage = "coverage"
)

// Checks lists every check name in the order Verify runs them.
var Checks = []string{
	CheckSignature, CheckContinuity, CheckTime, CheckFingerprint, CheckUUIDClash,
	CheckRanges, CheckEnergy, CheckLoadPower, CheckHealth, CheckCoverage,
}

// Verifier defaults, used where VerifyOptions leaves a field zero.
const (
	DefaultMaxSkewMs          = 2 * 60 * 1000
	DefaultMaxGapMs           = 2 * 60 * 1000
	DefaultEnergyTolerancePct = 15
	// DefaultLoadUtilBP and DefaultLoadPowerMinPct: a GPU averaging at
	// least 50% utilization must average at least 20% of its power limit.
	// Idle boards draw 5-15% of their limit; a real load at 50% draws
	// 40-60%. A tiny kernel that keeps one SM busy can still trip it, so
	// the check is evidence for a human or a reputation score, not a
	// fraud proof.
	DefaultLoadUtilBP      = 5000
	DefaultLoadPowerMinPct = 20
	DefaultMaxTempC        = 110
	// maxFindingsPerCheck keeps a hostile export from producing a huge
	// report; the last finding of a check says how many were left out.
	maxFindingsPerCheck = 64
)

// LeaseScope names the lease whose coverage Verify checks.
type LeaseScope struct {
	ID     string // lease (award record) ID
	Renter string // when set, telemetry must name this renter for the lease
	// StartMs and EndMs bound the lease; EndMs 0 means still running, so
	// coverage is checked up to the last window.
	StartMs, EndMs int64
	GPUs           []string // UUIDs leased
}

// VerifyOptions tunes Verify. The zero value verifies signatures,
// continuity and internal consistency with the defaults above.
type VerifyOptions struct {
	// Provider is the peer ID whose chain this is; "" takes the first
	// entry's provider.
	Provider string
	// NowMs is the verifier's clock (Unix ms); 0 skips the future check.
	NowMs     int64
	MaxSkewMs int64
	// Fingerprints are raw fingerprint entries of the same provider that
	// the segment's telemetry references but the segment does not contain
	// (a lease segment starts after the fingerprint was appended).
	Fingerprints [][]byte
	// KnownUUIDs maps GPU UUIDs to the provider (peer ID) known to own them.
	KnownUUIDs         map[string]string
	EnergyTolerancePct uint32
	LoadUtilBP         uint32
	LoadPowerMinPct    uint32
	MaxTempC           uint32
	// Lease turns on the coverage check; nil skips it.
	Lease    *LeaseScope
	MaxGapMs int64
}

func (o VerifyOptions) withDefaults() VerifyOptions {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def32 := func(v *uint32, d uint32) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxSkewMs, DefaultMaxSkewMs)
	def(&o.MaxGapMs, DefaultMaxGapMs)
	def32(&o.EnergyTolerancePct, DefaultEnergyTolerancePct)
	def32(&o.LoadUtilBP, DefaultLoadUtilBP)
	def32(&o.LoadPowerMinPct, DefaultLoadPowerMinPct)
	def32(&o.MaxTempC, DefaultMaxTempC)
	o.EnergyTolerancePct = min(o.EnergyTolerancePct, 1000)
	return o
}

// Finding is one result of one check. A check that found nothing wrong
// reports a single OK finding; otherwise one failing finding per problem.
type Finding struct {
	Check   string
	OK      bool
	Message string
	// Seq is the chain seq of the entry concerned; Index its position in
	// the input (-1 when the finding concerns no single entry, or an
	// entry too broken to have a seq).
	Seq   uint64
	Index int
}

func (f Finding) String() string {
	status := "ok"
	if !f.OK {
		status = "FAIL"
	}
	if f.Index < 0 {
		return fmt.Sprintf("%s %s: %s", status, f.Check, f.Message)
	}
	return fmt.Sprintf("%s %s: seq %d: %s", status, f.Check, f.Seq, f.Message)
}

// Report is the outcome of Verify: findings grouped by check, in Checks
// order.
type Report struct {
	Provider string
	Findings []Finding
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, f := range r.Findings {
		if !f.OK {
			return false
		}
	}
	return true
}

// Failed reports whether the named check failed.
func (r Report) Failed(check string) bool {
	for _, f := range r.Findings {
		if f.Check == check && !f.OK {
			return true
		}
	}
	return false
}

// Failures returns the failing findings.
func (r Report) Failures() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if !f.OK {
			out = append(out, f)
		}
	}
	return out
}

func (r Report) String() string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Verify checks a segment of one provider's chain (the entries of a lease,
// or a whole export), given as raw envelopes in chain order. It never
// stops at the first problem: every check runs over every entry that
// opened, and the report names each failure. Entries that fail the
// signature check are left out of the other checks (their content is not
// the provider's word). Verify is pure; the clock is opts.NowMs.
func Verify(entries [][]byte, opts VerifyOptions) Report {
	v := newVerifier(entries, opts.withDefaults())
	v.run(CheckSignature, func() {}) // findings were recorded while opening
	v.run(CheckContinuity, v.checkContinuity)
	v.run(CheckTime, v.checkTime)
	v.run(CheckFingerprint, v.checkFingerprint)
	v.run(CheckUUIDClash, v.checkUUIDClash)
	v.run(CheckRanges, v.eachGPU(v.checkRanges))
	v.run(CheckEnergy, v.eachGPU(v.checkEnergy))
	v.run(CheckLoadPower, v.eachGPU(v.checkLoadPower))
	v.run(CheckHealth, v.eachGPU(v.checkHealth))
	if v.opts.Lease == nil {
		v.skip(CheckCoverage, "skipped: no lease given")
	} else {
		v.run(CheckCoverage, v.checkCoverage)
	}
	return Report{Provider: v.provider, Findings: v.findings}
}
