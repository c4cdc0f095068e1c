package attest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrFalseProof: a fraud proof is well formed and signed by its reporter,
// but its evidence does not prove what it claims. The wrapping text says
// why.
var ErrFalseProof = errors.New("fraud proof does not hold")

// MaxProofEntries bounds the chain segment of a double-lease proof. The
// reporter picks the shortest segment: the last entry showing the GPU on
// the first lease up to the first showing it on the second.
const MaxProofEntries = 256

// FraudProofKind is the record kind of fraud proofs, gossiped on
// idlegrid/fraud/1.
var FraudProofKind = Register(Kind{
	Name: "fraud-proof", Domain: "idlegrid-fraud-proof", PayloadType: []byte("/idlegrid/fraud-proof/1"),
	Versions: []uint{RecordsVersion}, MaxSize: MaxFraudProofSize,
})

// FraudKind is what a fraud proof claims.
type FraudKind string

// Fraud kinds.
const (
	// FraudEquivocation: two validly signed chain entries of one provider
	// with the same seq and different bytes (a forked chain).
	FraudEquivocation FraudKind = "equivocation"
	// FraudDoubleLease: a contiguous, hash-linked segment of one provider's
	// chain in which the provider itself states that one GPU served two
	// leases of two renters at the same time.
	FraudDoubleLease FraudKind = "double-lease"
)

// FraudProof is evidence against a provider, signed by whoever found it.
// The reporter's signature only attributes the report; every node checks
// the evidence itself with VerifyFraudProof.
type FraudProof struct {
	V        uint      `cbor:"v"`
	Reporter string    `cbor:"reporter"`
	Kind     FraudKind `cbor:"kind"`
	Offender string    `cbor:"offender"`
	// GPU is the UUID a double-lease proof is about.
	GPU string `cbor:"gpu,omitempty"`
	// Entries are raw chain entries of the offender: the two conflicting
	// ones for equivocation, the segment in chain order for double-lease.
	Entries [][]byte `cbor:"entries"`
	AtMs    int64    `cbor:"at_ms"`
}

// RecordKind implements Payload.
func (FraudProof) RecordKind() *Kind { return FraudProofKind }

// Validate checks the proof's structure (not its evidence).
func (f *FraudProof) Validate() error {
	var p Problems
	checkVersion(&p, f.V)
	CheckPeerID(&p, "reporter", f.Reporter)
	CheckPeerID(&p, "offender", f.Offender)
	switch f.Kind {
	case FraudEquivocation:
		if len(f.Entries) != 2 {
			p.Addf("entries", "%d entries, an equivocation needs exactly 2", len(f.Entries))
		}
		if f.GPU != "" {
			p.Addf("gpu", "must be empty for an equivocation")
		}
	case FraudDoubleLease:
		if len(f.Entries) < 2 || len(f.Entries) > MaxProofEntries {
			p.Addf("entries", "%d entries, want 2..%d", len(f.Entries), MaxProofEntries)
		}
		checkText(&p, "gpu", f.GPU, true)
	default:
		p.Addf("kind", "%q is not equivocation or double-lease", f.Kind)
	}
	for i, e := range f.Entries {
		if len(e) == 0 || len(e) > MaxEntrySize {
			p.Addf(fmt.Sprintf("entries[%d]", i), "%d bytes, want 1..%d", len(e), MaxEntrySize)
		}
	}
	checkPositiveMs(&p, "at_ms", f.AtMs)
	return p.Err(ErrInvalid, FraudProofKind.Name)
}

// SealFraudProof validates f, checks its evidence (a node never gossips a
// proof it would reject) and signs it with key, which must be f.Reporter's.
func SealFraudProof(f *FraudProof, key crypto.PrivKey) ([]byte, error) {
	if f == nil {
		return nil, errors.New("attest.SealFraudProof: nil proof")
	}
	validate := func() error {
		if err := f.Validate(); err != nil {
			return err
		}
		_, err := f.checkEvidence()
		return err
	}
	return sealOwned("SealFraudProof", f, validate, f.Reporter, key)
}

// OpenFraudProof verifies and decodes a fraud proof (at most
// MaxFraudProofSize bytes): the reporter's signature and the structure,
// not the evidence.
func OpenFraudProof(raw []byte) (*FraudProof, error) {
	f, signer, err := Open[FraudProof](raw, MaxFraudProofSize)
	if err != nil {
		return nil, fmt.Errorf("attest.OpenFraudProof: %w", err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("attest.OpenFraudProof: %w", err)
	}
	if err := checkOwner(signer, f.Reporter); err != nil {
		return nil, fmt.Errorf("attest.OpenFraudProof: %w", err)
	}
	return f, nil
}

// VerifyFraudProof opens a fraud proof and checks its evidence itself,
// trusting nothing the reporter says. It returns the offender, or an error
// naming why the proof is malformed or false (ErrFalseProof).
func VerifyFraudProof(raw []byte) (peer.ID, error) {
	f, err := OpenFraudProof(raw)
	if err != nil {
		return "", fmt.Errorf("attest.VerifyFraudProof: %w", err)
	}
	offender, err := f.checkEvidence()
	if err != nil {
		return "", fmt.Errorf("attest.VerifyFraudProof: %w", err)
	}
	return offender, nil
}

// checkEvidence opens every entry and checks the claim.
func (f *FraudProof) checkEvidence() (peer.ID, error) {
	offender, err := peer.Decode(f.Offender)
	if err != nil {
		return "", fmt.Errorf("%w: offender: %w", ErrFalseProof, err)
	}
	es := make([]*Entry, len(f.Entries))
	for i, raw := range f.Entries {
		e, err := OpenEntry(raw)
		if err != nil {
			return "", fmt.Errorf("%w: entry %d: %w", ErrFalseProof, i, err)
		}
		if e.Provider != f.Offender {
			return "", fmt.Errorf("%w: entry %d is provider %s's, the proof accuses %s", ErrFalseProof, i, e.Provider, f.Offender)
		}
		es[i] = e
	}
	switch f.Kind {
	case FraudEquivocation:
		err = checkEquivocation(f.Entries, es)
	case FraudDoubleLease:
		err = checkDoubleLease(f.Entries, es, f.GPU)
	default:
		err = fmt.Errorf("unknown kind %q", f.Kind)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrFalseProof, f.Kind, err)
	}
	return offender, nil
}

func checkEquivocation(raws [][]byte, es []*Entry) error {
	switch {
	case bytes.Equal(raws[0], raws[1]):
		return errors.New("the two entries are the same bytes")
	case es[0].Seq != es[1].Seq:
		return fmt.Errorf("the entries have seq %d and %d, not one seq", es[0].Seq, es[1].Seq)
	}
	return nil
}

// useClaim is a provider's statement that a GPU served a lease over
// [from, to) (to = noEnd for a started job not yet ended).
type useClaim struct {
	lease, renter string
	from, to      int64
}

const noEnd = int64(^uint64(0) >> 1)

// claimOf returns the entry's statement that gpu serves a lease: a job
// started on it (from the entry's time on, until an end event), or a
// telemetry window attributing it to a lease (during the window).
func claimOf(e *Entry, gpu string) (useClaim, bool) {
	switch {
	case e.Job != nil && e.Job.Event == JobStarted:
		for _, u := range e.Job.GPUs {
			if u == gpu {
				return useClaim{e.Job.Lease, e.Job.Renter, e.AtMs, noEnd}, true
			}
		}
	case e.Telemetry != nil:
		for _, g := range e.Telemetry.GPUs {
			if g.UUID == gpu && g.Lease != "" {
				return useClaim{g.Lease, g.Renter, e.Telemetry.StartMs, e.Telemetry.EndMs}, true
			}
		}
	}
	return useClaim{}, false
}

// checkDoubleLease checks a double-lease segment: contiguous and linked;
// the first entry claims gpu for lease L1 of renter R1, the last claims it
// for lease L2 of another renter R2; no entry in between ends L1; and the
// two claims overlap in time. The overlap rule is what makes the proof
// conclusive: a started job holds its GPUs until the chain records its
// end, so "started L1" followed by any later claim on the GPU conflicts,
// while a telemetry window (appended after the fact) only claims its own
// window.
func checkDoubleLease(raws [][]byte, es []*Entry, gpu string) error {
	for i := 1; i < len(es); i++ {
		if es[i].Seq != es[i-1].Seq+1 {
			return fmt.Errorf("not contiguous: seq %d follows %d", es[i].Seq, es[i-1].Seq)
		}
		if id := RecordID(raws[i-1]).String(); es[i].Prev != id {
			return fmt.Errorf("broken link: seq %d's prev is %s, not seq %d's ID %s", es[i].Seq, es[i].Prev, es[i-1].Seq, id)
		}
	}
	first, last := es[0], es[len(es)-1]
	c1, ok := claimOf(first, gpu)
	if !ok {
		return fmt.Errorf("the first entry (seq %d) does not show GPU %s serving a lease", first.Seq, gpu)
	}
	c2, ok := claimOf(last, gpu)
	if !ok {
		return fmt.Errorf("the last entry (seq %d) does not show GPU %s serving a lease", last.Seq, gpu)
	}
	switch {
	case c1.lease == c2.lease:
		return fmt.Errorf("both entries show lease %s", c1.lease)
	case c1.renter == c2.renter:
		return fmt.Errorf("both leases are renter %s's", c1.renter)
	}
	for _, e := range es[1 : len(es)-1] {
		if e.Job != nil && e.Job.Lease == c1.lease && e.Job.Event.Ends() {
			return fmt.Errorf("seq %d ends lease %s (%s) before the second claim", e.Seq, c1.lease, e.Job.Event)
		}
	}
	if max(c1.from, c2.from) >= min(c1.to, c2.to) {
		return fmt.Errorf("the claims do not overlap in time: lease %s [%d, %s), lease %s [%d, %s)",
			c1.lease, c1.from, endText(c1.to), c2.lease, c2.from, endText(c2.to))
	}
	return nil
}

func endText(ms int64) string {
	if ms == noEnd {
		return "open"
	}
	return fmt.Sprint(ms)
}
