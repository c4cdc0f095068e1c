package auction

import (
	"errors"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// An AbandonNote is a provider's signed word that a renter awarded it a
// lease and then never sent the job's spec, gossiped on idlegrid/attest/1
// so one renter key cannot abandon awards at every provider in turn
// (docs/protocol.md §7.8). It carries the award itself:
// the renter's signature shows the renter did award this provider, so a
// provider can note only renters that awarded it. That the renter then
// abandoned it is the provider's word alone, so a note only tightens what
// a provider accepts from the renter (TakeUpLimits: treated as one
// without paid history), and it takes notes of several providers to
// refuse it.
type AbandonNote struct {
	V        uint   `cbor:"v"`
	Provider string `cbor:"provider"`
	Renter   string `cbor:"renter"`
	// Lease is the award's record ID (the lease both sides signed).
	Lease string `cbor:"lease"`
	// AwardEnv is the renter's sealed award.
	AwardEnv []byte `cbor:"award_env"`
	// AtMs is when the provider released the lease's GPUs.
	AtMs int64 `cbor:"at_ms"`
}

// MaxAbandonNoteSize bounds a sealed note: the award (MaxEndorsedAwardSize)
// and a few IDs.
const MaxAbandonNoteSize = 7 << 10

// AbandonNoteFor is how long after its award a note may be made and
// counts: long enough to stop a key that goes from provider to provider,
// short enough that a note cannot follow a renter for long.
const AbandonNoteFor = time.Hour

// AbandonKind is the note's record kind.
var AbandonKind = attest.Register(attest.Kind{
	Name: "abandon-note", Domain: "idlegrid-abandon-note", PayloadType: []byte("/idlegrid/abandon-note/1"),
	Versions: []uint{MessagesVersion}, MaxSize: MaxAbandonNoteSize,
})

// RecordKind implements attest.Payload.
func (AbandonNote) RecordKind() *attest.Kind { return AbandonKind }

// Validate checks the note's structure without a clock.
func (n *AbandonNote) Validate() error {
	var p problems
	msgCheckVersion(&p, n.V)
	attest.CheckPeerID(&p, "provider", n.Provider)
	attest.CheckPeerID(&p, "renter", n.Renter)
	if n.Provider == n.Renter {
		p.Addf("renter", "is the provider")
	}
	attest.CheckRecordID(&p, "lease", n.Lease)
	if k := len(n.AwardEnv); k == 0 || k > MaxEndorsedAwardSize {
		p.Addf("award_env", "%d bytes, want 1..%d", k, MaxEndorsedAwardSize)
	}
	if n.AtMs <= 0 {
		p.Addf("at_ms", "must be positive Unix milliseconds")
	}
	return messageErr(&p, AbandonKind.Name)
}

// ErrNoteUnbacked: an abandon note's award is not an award of the note's
// renter to the note's provider, or the note is dated outside the award's
// AbandonNoteFor.
var ErrNoteUnbacked = errors.New("abandon note not backed by its award")

// NoteAbandoned builds the provider's note of an abandoned award (the
// sealed award it countersigned) at now; the provider seals it
// (SealAbandonNote).
func NoteAbandoned(awardEnv []byte, now time.Time) (*AbandonNote, error) {
	aw, _, err := OpenAward(awardEnv)
	if err != nil {
		return nil, fmt.Errorf("auction.NoteAbandoned: %w", err)
	}
	n := &AbandonNote{
		V: MessagesVersion, Provider: aw.Provider, Renter: aw.Renter, Lease: attest.RecordID(awardEnv).String(),
		AwardEnv: awardEnv, AtMs: now.UnixMilli(),
	}
	if err := n.checkAward(); err != nil {
		return nil, fmt.Errorf("auction.NoteAbandoned: %w", err)
	}
	return n, nil
}

// SealAbandonNote validates n and signs it with key, which must be
// n.Provider's.
func SealAbandonNote(n *AbandonNote, key crypto.PrivKey) ([]byte, error) {
	if n == nil {
		return nil, fmt.Errorf("auction.SealAbandonNote: %w", errNilMessage)
	}
	return sealMessage("SealAbandonNote", n, n.Provider, key)
}

// OpenAbandonNote verifies and decodes a sealed note (at most
// MaxAbandonNoteSize bytes), validates it, checks that the signer is
// n.Provider and that the award it carries backs it (checkAward). The
// caller checks the note's age against its clock (Expired).
func OpenAbandonNote(raw []byte) (*AbandonNote, peer.ID, error) {
	n, signer, err := openMessage[AbandonNote]("OpenAbandonNote", raw, MaxAbandonNoteSize,
		func(n *AbandonNote) string { return n.Provider })
	if err != nil {
		return nil, "", err
	}
	if err := n.checkAward(); err != nil {
		return nil, "", fmt.Errorf("auction.OpenAbandonNote: %w", err)
	}
	return n, signer, nil
}

// checkAward checks that the note reports the award it carries: signed by
// the note's renter, to the note's provider, the record the note names,
// and the note made after the award and within AbandonNoteFor of it.
func (n *AbandonNote) checkAward() error {
	aw, _, err := OpenAward(n.AwardEnv)
	if err != nil {
		return fmt.Errorf("%w: award: %w", ErrNoteUnbacked, err)
	}
	at := time.UnixMilli(n.AtMs)
	issued := time.UnixMilli(aw.IssuedAtMs)
	switch {
	case attest.RecordID(n.AwardEnv).String() != n.Lease:
		return fmt.Errorf("%w: the award is not record %s", ErrNoteUnbacked, n.Lease)
	case aw.Renter != n.Renter || aw.Provider != n.Provider:
		return fmt.Errorf("%w: the award is between other parties", ErrNoteUnbacked)
	case at.Before(issued) || at.Sub(issued) > AbandonNoteFor:
		return fmt.Errorf("%w: noted %s after the award, want within 0..%s", ErrNoteUnbacked, at.Sub(issued), AbandonNoteFor)
	}
	return nil
}

// Expired reports whether the note no longer counts at now: it is older
// than AbandonNoteFor, or dated further ahead than skew.
func (n *AbandonNote) Expired(now time.Time, skew time.Duration) bool {
	at := time.UnixMilli(n.AtMs)
	return now.Sub(at) > AbandonNoteFor || at.Sub(now) > skew
}
