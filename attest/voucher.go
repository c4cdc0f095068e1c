package attest

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Kinds of the payment records.
var (
	VoucherKind = Register(Kind{
		Name: "voucher", Domain: "idlegrid-voucher", PayloadType: []byte("/idlegrid/voucher/1"),
		Versions: []uint{RecordsVersion}, MaxSize: MaxVoucherSize,
	})
	ReceiptKind = Register(Kind{
		Name: "receipt", Domain: "idlegrid-receipt", PayloadType: []byte("/idlegrid/receipt/1"),
		Versions: []uint{RecordsVersion}, MaxSize: MaxReceiptSize,
	})
)

// Voucher is the renter's signed, cumulative promise to pay for a lease up
// to CoveredUntilMs (DESIGN.md §8). Each interval the renter verifies the
// provider's telemetry and signs the next voucher; a later voucher
// supersedes every earlier one, so only the last one matters.
type Voucher struct {
	V        uint   `cbor:"v"`
	Lease    string `cbor:"lease"` // award record ID
	Renter   string `cbor:"renter"`
	Provider string `cbor:"provider"`
	Seq      uint64 `cbor:"seq"` // interval number, from 1
	// AmountMicro is the cumulative amount owed for the lease, uUSD.
	AmountMicro    uint64 `cbor:"amount_micro"`
	CoveredUntilMs int64  `cbor:"covered_until_ms"`
	// Telemetry is the record ID of the last chain entry the renter
	// verified before signing; empty for a voucher paid in advance.
	Telemetry string `cbor:"telemetry,omitempty"`
	IssuedMs  int64  `cbor:"issued_ms"`
}

// RecordKind implements Payload.
func (Voucher) RecordKind() *Kind { return VoucherKind }

// Validate checks the voucher's structure without a clock.
func (v *Voucher) Validate() error {
	var p Problems
	checkVersion(&p, v.V)
	CheckRecordID(&p, "lease", v.Lease)
	CheckPeerID(&p, "renter", v.Renter)
	CheckPeerID(&p, "provider", v.Provider)
	if v.Renter != "" && v.Renter == v.Provider {
		p.Addf("provider", "is the renter")
	}
	if v.Seq == 0 {
		p.Addf("seq", "must be at least 1")
	}
	checkPositiveMs(&p, "covered_until_ms", v.CoveredUntilMs)
	if v.Telemetry != "" {
		CheckRecordID(&p, "telemetry", v.Telemetry)
	}
	checkPositiveMs(&p, "issued_ms", v.IssuedMs)
	return p.Err(ErrInvalid, VoucherKind.Name)
}

// Supersedes reports why next cannot follow v for the same lease: it must
// name the same lease and parties, have a later seq, and neither the
// amount nor the coverage may go down. Vouchers are cumulative, so a later
// one may skip seqs: a voucher lost in transit costs nothing once the next
// arrives. nil means it supersedes v.
func (v *Voucher) Supersedes(next *Voucher) error {
	switch {
	case next.Lease != v.Lease || next.Renter != v.Renter || next.Provider != v.Provider:
		return errors.New("attest.Voucher.Supersedes: different lease or parties")
	case next.Seq <= v.Seq:
		return fmt.Errorf("attest.Voucher.Supersedes: seq %d does not follow %d", next.Seq, v.Seq)
	case next.AmountMicro < v.AmountMicro:
		return fmt.Errorf("attest.Voucher.Supersedes: amount went down from %d to %d", v.AmountMicro, next.AmountMicro)
	case next.CoveredUntilMs < v.CoveredUntilMs:
		return fmt.Errorf("attest.Voucher.Supersedes: coverage went back from %d to %d", v.CoveredUntilMs, next.CoveredUntilMs)
	}
	return nil
}

// SealVoucher validates v and signs it with key, which must be v.Renter's.
func SealVoucher(v *Voucher, key crypto.PrivKey) ([]byte, error) {
	if v == nil {
		return nil, errors.New("attest.SealVoucher: nil voucher")
	}
	return sealOwned("SealVoucher", v, v.Validate, v.Renter, key)
}

// OpenVoucher verifies and decodes a voucher (at most MaxVoucherSize
// bytes), validates it and checks that the signer is v.Renter.
func OpenVoucher(raw []byte) (*Voucher, error) {
	v, signer, err := Open[Voucher](raw, MaxVoucherSize)
	if err != nil {
		return nil, fmt.Errorf("attest.OpenVoucher: %w", err)
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("attest.OpenVoucher: %w", err)
	}
	if err := checkOwner(signer, v.Renter); err != nil {
		return nil, fmt.Errorf("attest.OpenVoucher: %w", err)
	}
	return v, nil
}

// sealOwned validates rec, checks that key belongs to owner (the peer the
// record names as its author) and signs it: a node never signs what it
// would refuse to open, nor a record that speaks for another peer.
func sealOwned(op string, rec Payload, validate func() error, owner string, key crypto.PrivKey) ([]byte, error) {
	if key == nil {
		return nil, fmt.Errorf("attest.%s: nil key", op)
	}
	if err := validate(); err != nil {
		return nil, fmt.Errorf("attest.%s: %w", op, err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("attest.%s: %w", op, err)
	}
	if id.String() != owner {
		return nil, fmt.Errorf("attest.%s: %w: key is %s, record names %s", op, ErrNotOwner, id, owner)
	}
	raw, err := Seal(rec, key)
	if err != nil {
		return nil, fmt.Errorf("attest.%s: %w", op, err)
	}
	return raw, nil
}
