package attest

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// ErrMismatch: two records that must agree (a receipt and its embedded
// voucher) name different leases or parties.
var ErrMismatch = errors.New("records disagree")

// maxOutcomeLen bounds Receipt.Outcome.
const maxOutcomeLen = 32

// Receipt is the provider's signed account of a finished lease. It embeds
// the renter's last voucher byte for byte, so one receipt carries both
// parties' signatures and can be checked by anyone without other records.
type Receipt struct {
	V        uint   `cbor:"v"`
	Lease    string `cbor:"lease"`
	Provider string `cbor:"provider"`
	Renter   string `cbor:"renter"`
	// Outcome is the lease's final state ("finished", "failed",
	// "preempted", ...): lower-case letters and '-'.
	Outcome  string `cbor:"outcome"`
	ExitCode int32  `cbor:"exit_code,omitempty"`
	Output   string `cbor:"output,omitempty"` // output CID
	GPUMs    uint64 `cbor:"gpu_ms"`           // GPU-milliseconds served
	EnergyMJ uint64 `cbor:"energy_mj"`
	// FirstSeq and LastSeq are the provider chain entries covering the lease.
	FirstSeq uint64 `cbor:"first_seq"`
	LastSeq  uint64 `cbor:"last_seq"`
	AtMs     int64  `cbor:"at_ms"`
	// Voucher is the raw sealed last voucher of the lease.
	Voucher []byte `cbor:"voucher"`
}

// RecordKind implements Payload.
func (Receipt) RecordKind() *Kind { return ReceiptKind }

// Validate checks the receipt's own structure. It does not open the
// embedded voucher; OpenReceipt and SealReceipt do.
func (r *Receipt) Validate() error {
	var p Problems
	checkVersion(&p, r.V)
	CheckRecordID(&p, "lease", r.Lease)
	CheckPeerID(&p, "provider", r.Provider)
	CheckPeerID(&p, "renter", r.Renter)
	if r.Outcome == "" || len(r.Outcome) > maxOutcomeLen || !isOutcome(r.Outcome) {
		p.Addf("outcome", "must be 1..%d lower-case letters and '-'", maxOutcomeLen)
	}
	if r.Output != "" {
		CheckContentID(&p, "output", r.Output)
	}
	if r.LastSeq < r.FirstSeq {
		p.Addf("last_seq", "%d is before first_seq %d", r.LastSeq, r.FirstSeq)
	}
	checkPositiveMs(&p, "at_ms", r.AtMs)
	if len(r.Voucher) == 0 || len(r.Voucher) > MaxVoucherSize {
		p.Addf("voucher", "%d bytes, want 1..%d", len(r.Voucher), MaxVoucherSize)
	}
	return p.Err(ErrInvalid, ReceiptKind.Name)
}

func isOutcome(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'a' && s[i] <= 'z' || s[i] == '-') {
			return false
		}
	}
	return true
}

// matchVoucher opens the embedded voucher and checks that it names the
// receipt's lease, provider and renter.
func (r *Receipt) matchVoucher() (*Voucher, error) {
	v, err := OpenVoucher(r.Voucher)
	if err != nil {
		return nil, fmt.Errorf("embedded voucher: %w", err)
	}
	if v.Lease != r.Lease || v.Provider != r.Provider || v.Renter != r.Renter {
		return nil, fmt.Errorf("%w: voucher is for lease %s (%s -> %s), receipt for lease %s (%s -> %s)",
			ErrMismatch, v.Lease, v.Renter, v.Provider, r.Lease, r.Renter, r.Provider)
	}
	return v, nil
}

// SealReceipt validates r, checks its embedded voucher (renter's signature,
// same lease and parties) and signs it with key, which must be
// r.Provider's.
func SealReceipt(r *Receipt, key crypto.PrivKey) ([]byte, error) {
	if r == nil {
		return nil, errors.New("attest.SealReceipt: nil receipt")
	}
	validate := func() error {
		if err := r.Validate(); err != nil {
			return err
		}
		_, err := r.matchVoucher()
		return err
	}
	return sealOwned("SealReceipt", r, validate, r.Provider, key)
}

// OpenReceipt verifies a receipt (at most MaxReceiptSize bytes): the
// provider's signature and structure, then the embedded voucher's renter
// signature, and that both name the same lease and parties. It returns the
// receipt and its voucher.
func OpenReceipt(raw []byte) (*Receipt, *Voucher, error) {
	r, signer, err := Open[Receipt](raw, MaxReceiptSize)
	if err != nil {
		return nil, nil, fmt.Errorf("attest.OpenReceipt: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, nil, fmt.Errorf("attest.OpenReceipt: %w", err)
	}
	if err := checkOwner(signer, r.Provider); err != nil {
		return nil, nil, fmt.Errorf("attest.OpenReceipt: %w", err)
	}
	v, err := r.matchVoucher()
	if err != nil {
		return nil, nil, fmt.Errorf("attest.OpenReceipt: %w", err)
	}
	return r, v, nil
}
