package attest

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrUnprovable: a wrong-result proof is well formed and its claims are
// real, but the re-run settles nothing (it matched neither claim, failed,
// or did not finish within the bounds): the module is not deterministic
// under these settings, or it costs more than a verifier spends. Neither
// provider is proven wrong and the reporter is not proven false.
var ErrUnprovable = errors.New("wrong result not provable")

// Bounds of a wrong-result proof. The proof carries the module and the
// job spec, so it fits one gossip message; the re-run each verifier pays
// for is capped by MaxReplay*.
const (
	// MaxProofModuleSize caps the module bytes a proof carries: a larger
	// module's disagreement stays unverified at the renter (no proof).
	MaxProofModuleSize = 160 << 10
	// MaxProofSpecSize caps the job spec bytes.
	MaxProofSpecSize = 16 << 10
	// ReplayRuns is how many times a verifier runs the job, each under
	// other clocks and randomness: the same output from every run shows
	// the job is deterministic in fact.
	ReplayRuns = 2
	// MaxReplayTimeMs caps the wall time of one run; a verifier spends
	// at most ReplayRuns times it on one proof.
	MaxReplayTimeMs = 10_000
	// MaxReplayMemoryMiB caps the re-run's linear memory.
	MaxReplayMemoryMiB = 256
	// MaxReplayOutputMiB caps what the re-run may write to /out.
	MaxReplayOutputMiB = 16
	// claimSkewMs is how far ahead of the verifier's clock a claim's
	// entry may be dated.
	claimSkewMs = 60_000
)

// WrongResultKind is the record kind of wrong-result proofs, gossiped on
// idlegrid/fraud/1 beside FraudProofKind.
var WrongResultKind = Register(Kind{
	Name: "wrong-result-proof", Domain: "idlegrid-wrong-result-proof", PayloadType: []byte("/idlegrid/wrong-result-proof/1"),
	Versions: []uint{RecordsVersion}, MaxSize: MaxFraudProofSize,
})

// ReplayBounds are the limits a deterministic run is re-run under. A
// finished run within them gives the same output on any node; each field
// is at most its MaxReplay* cap.
type ReplayBounds struct {
	TimeMs    int64 `cbor:"time_ms"`
	MemoryMiB int64 `cbor:"memory_mib"`
	OutputMiB int64 `cbor:"output_mib"`
}

// WrongResultProof says that two providers signed finished events for the
// same deterministic job spec with different output CIDs, and that the
// offender's is the wrong one. It carries everything a node needs to
// settle that by re-running the job itself: both signed chain entries,
// the spec (whose CID both entries name), the WASM module (whose CID the
// spec names) and the bounds of the re-run.
type WrongResultProof struct {
	V        uint   `cbor:"v"`
	Reporter string `cbor:"reporter"`
	// Offender is the provider whose output the re-run contradicts.
	Offender string `cbor:"offender"`
	// Claims are two raw chain entries, each a finished job event: the
	// offender's first, then the other provider's (the witness).
	Claims [][]byte     `cbor:"claims"`
	Spec   []byte       `cbor:"spec"`
	Module []byte       `cbor:"module"`
	Bounds ReplayBounds `cbor:"bounds"`
	AtMs   int64        `cbor:"at_ms"`
}

// RecordKind implements Payload.
func (WrongResultProof) RecordKind() *Kind { return WrongResultKind }

// Validate checks the proof's structure (not its evidence).
func (w *WrongResultProof) Validate() error {
	var p Problems
	checkVersion(&p, w.V)
	CheckPeerID(&p, "reporter", w.Reporter)
	CheckPeerID(&p, "offender", w.Offender)
	if len(w.Claims) != 2 {
		p.Addf("claims", "%d claims, want exactly 2", len(w.Claims))
	}
	for i, c := range w.Claims {
		if len(c) == 0 || len(c) > MaxEntrySize {
			p.Addf(fmt.Sprintf("claims[%d]", i), "%d bytes, want 1..%d", len(c), MaxEntrySize)
		}
	}
	if len(w.Spec) == 0 || len(w.Spec) > MaxProofSpecSize {
		p.Addf("spec", "%d bytes, want 1..%d", len(w.Spec), MaxProofSpecSize)
	}
	if len(w.Module) == 0 || len(w.Module) > MaxProofModuleSize {
		p.Addf("module", "%d bytes, want 1..%d", len(w.Module), MaxProofModuleSize)
	}
	b := w.Bounds
	if b.TimeMs <= 0 || b.TimeMs > MaxReplayTimeMs {
		p.Addf("bounds.time_ms", "%d, want 1..%d", b.TimeMs, MaxReplayTimeMs)
	}
	if b.MemoryMiB <= 0 || b.MemoryMiB > MaxReplayMemoryMiB {
		p.Addf("bounds.memory_mib", "%d, want 1..%d", b.MemoryMiB, MaxReplayMemoryMiB)
	}
	if b.OutputMiB <= 0 || b.OutputMiB > MaxReplayOutputMiB {
		p.Addf("bounds.output_mib", "%d, want 1..%d", b.OutputMiB, MaxReplayOutputMiB)
	}
	checkPositiveMs(&p, "at_ms", w.AtMs)
	return p.Err(ErrInvalid, WrongResultKind.Name)
}

// SealWrongResult validates w, checks its claims and signs it with key,
// which must be w.Reporter's. The re-run is the caller's to do before:
// a node gossips only a proof its own re-run upholds (Judge).
func SealWrongResult(w *WrongResultProof, key crypto.PrivKey, now time.Time) ([]byte, error) {
	if w == nil {
		return nil, errors.New("attest.SealWrongResult: nil proof")
	}
	validate := func() error {
		if err := w.Validate(); err != nil {
			return err
		}
		_, err := w.Claim(now)
		return err
	}
	return sealOwned("SealWrongResult", w, validate, w.Reporter, key)
}

// OpenWrongResult verifies and decodes a wrong-result proof (at most
// MaxFraudProofSize bytes): the reporter's signature and the structure,
// not the evidence.
func OpenWrongResult(raw []byte) (*WrongResultProof, error) {
	w, signer, err := Open[WrongResultProof](raw, MaxFraudProofSize)
	if err != nil {
		return nil, fmt.Errorf("attest.OpenWrongResult: %w", err)
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("attest.OpenWrongResult: %w", err)
	}
	if err := checkOwner(signer, w.Reporter); err != nil {
		return nil, fmt.Errorf("attest.OpenWrongResult: %w", err)
	}
	return w, nil
}

// WrongResultClaim is what a proof's claims establish before any re-run:
// two providers signed finished events, exit 0, for one job spec, with
// different outputs.
type WrongResultClaim struct {
	Job              string // job spec CID both events name
	Offender         peer.ID
	Witness          peer.ID
	OffenderOutput   string
	WitnessOutput    string
	OffenderEntryRaw []byte
}

// Claim checks the proof's claims, trusting nothing the reporter says:
// each opens as a chain entry signed by its provider; the first is the
// offender's; the two providers differ; both are finished job events
// with exit code 0 naming the same job spec CID; their output CIDs
// differ; neither is dated after now (plus claimSkewMs). It does not
// re-run anything. Claim is pure.
func (w *WrongResultProof) Claim(now time.Time) (*WrongResultClaim, error) {
	var es [2]*Entry
	for i, raw := range w.Claims {
		e, err := OpenEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: claim %d: %w", ErrFalseProof, i, err)
		}
		j := e.Job
		switch {
		case j == nil || j.Event != JobFinished:
			return nil, fmt.Errorf("%w: claim %d (provider %s seq %d) is not a finished job event", ErrFalseProof, i, e.Provider, e.Seq)
		case j.ExitCode != 0:
			return nil, fmt.Errorf("%w: claim %d records exit code %d, not 0", ErrFalseProof, i, j.ExitCode)
		case j.Output == "":
			return nil, fmt.Errorf("%w: claim %d names no output", ErrFalseProof, i)
		case e.AtMs > now.UnixMilli()+claimSkewMs:
			return nil, fmt.Errorf("%w: claim %d is dated in the future", ErrFalseProof, i)
		}
		es[i] = e
	}
	off, wit := es[0], es[1]
	switch {
	case off.Provider != w.Offender:
		return nil, fmt.Errorf("%w: the first claim is provider %s's, the proof accuses %s", ErrFalseProof, off.Provider, w.Offender)
	case off.Provider == wit.Provider:
		return nil, fmt.Errorf("%w: both claims are provider %s's", ErrFalseProof, off.Provider)
	case off.Job.Job != wit.Job.Job:
		return nil, fmt.Errorf("%w: the claims are for job specs %s and %s, not one", ErrFalseProof, off.Job.Job, wit.Job.Job)
	case off.Job.Output == wit.Job.Output:
		return nil, fmt.Errorf("%w: both claims name output %s", ErrFalseProof, off.Job.Output)
	}
	offender, err := peer.Decode(off.Provider)
	if err != nil {
		return nil, fmt.Errorf("%w: offender: %w", ErrFalseProof, err)
	}
	witness, err := peer.Decode(wit.Provider)
	if err != nil {
		return nil, fmt.Errorf("%w: witness: %w", ErrFalseProof, err)
	}
	return &WrongResultClaim{
		Job: off.Job.Job, Offender: offender, Witness: witness,
		OffenderOutput: off.Job.Output, WitnessOutput: wit.Job.Output, OffenderEntryRaw: w.Claims[0],
	}, nil
}

// Judge settles a claim with a verifier's own re-run: its exit code and
// output CID. The proof holds (nil) only when the re-run exited 0 with
// the witness's output, which the offender's differs from. The re-run
// giving the offender's output makes the proof false (ErrFalseProof);
// anything else (another output, a failure) is ErrUnprovable.
func (c *WrongResultClaim) Judge(exitCode int, output string) error {
	switch {
	case exitCode == 0 && output == c.WitnessOutput:
		return nil
	case exitCode == 0 && output == c.OffenderOutput:
		return fmt.Errorf("%w: the re-run gives %s, the accused provider's output", ErrFalseProof, output)
	case exitCode != 0:
		return fmt.Errorf("%w: the re-run exited %d", ErrUnprovable, exitCode)
	}
	return fmt.Errorf("%w: the re-run gives %s, neither claim's output", ErrUnprovable, output)
}
