package attest

import (
	"errors"
	"testing"
)

func testVoucher(t testing.TB) *Voucher {
	return &Voucher{V: 1, Lease: leaseL1, Renter: peerOf(t, renterSeed), Provider: peerOf(t, providerSeed),
		Seq: 3, AmountMicro: 2_550_000, CoveredUntilMs: t0 + 3*windowMs, Telemetry: fakeID("entry-4"), IssuedMs: t0 + 3*windowMs + 200}
}

func testReceipt(t testing.TB, voucher []byte) *Receipt {
	return &Receipt{V: 1, Lease: leaseL1, Provider: peerOf(t, providerSeed), Renter: peerOf(t, renterSeed),
		Outcome: "finished", Output: outCID, GPUMs: 3 * uint64(windowMs), EnergyMJ: 119_000_000,
		FirstSeq: 1, LastSeq: 5, AtMs: t0 + 3*windowMs + 500, Voucher: voucher}
}

func sealedVoucher(t testing.TB) []byte {
	raw, err := SealVoucher(testVoucher(t), testKey(t, renterSeed))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestVoucherRoundTrip(t *testing.T) {
	raw := sealedVoucher(t)
	v, err := OpenVoucher(raw)
	if err != nil {
		t.Fatal(err)
	}
	if *v != *testVoucher(t) {
		t.Errorf("round trip = %+v", v)
	}
	if _, err := SealVoucher(testVoucher(t), testKey(t, providerSeed)); !errors.Is(err, ErrNotOwner) {
		t.Errorf("provider signing a renter's voucher: %v", err)
	}
	forged, err := Seal(testVoucher(t), testKey(t, otherSeed))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenVoucher(forged); !errors.Is(err, ErrNotOwner) {
		t.Errorf("forged voucher: %v", err)
	}
}

func TestVoucherSupersedes(t *testing.T) {
	a := testVoucher(t)
	b := *a
	b.Seq, b.AmountMicro, b.CoveredUntilMs = 4, a.AmountMicro+850_000, a.CoveredUntilMs+windowMs
	if err := a.Supersedes(&b); err != nil {
		t.Errorf("next voucher: %v", err)
	}
	skip := b
	skip.Seq = a.Seq + 5 // cumulative: a lost voucher in between costs nothing
	if err := a.Supersedes(&skip); err != nil {
		t.Errorf("a later voucher after a lost one: %v", err)
	}
	for name, mut := range map[string]func(v *Voucher){
		"seq_same":      func(v *Voucher) { v.Seq = a.Seq },
		"seq_back":      func(v *Voucher) { v.Seq = a.Seq - 1 },
		"amount_down":   func(v *Voucher) { v.AmountMicro = 1 },
		"coverage_back": func(v *Voucher) { v.CoveredUntilMs = 1 },
		"other_lease":   func(v *Voucher) { v.Lease = leaseL2 },
	} {
		c := b
		mut(&c)
		if a.Supersedes(&c) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReceipt(t *testing.T) {
	provider := testKey(t, providerSeed)
	raw, err := SealReceipt(testReceipt(t, sealedVoucher(t)), provider)
	if err != nil {
		t.Fatal(err)
	}
	r, v, err := OpenReceipt(raw)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lease != v.Lease || v.Renter != peerOf(t, renterSeed) || r.GPUMs != 180_000 {
		t.Errorf("receipt %+v voucher %+v", r, v)
	}

	forgedVoucher, err := Seal(testVoucher(t), testKey(t, otherSeed)) // names the renter, signed by another
	if err != nil {
		t.Fatal(err)
	}
	otherLease := testVoucher(t)
	otherLease.Lease = leaseL2
	otherLeaseRaw, err := SealVoucher(otherLease, testKey(t, renterSeed))
	if err != nil {
		t.Fatal(err)
	}
	tampered := sealedVoucher(t)
	tampered[len(tampered)-1] ^= 1
	for name, tc := range map[string]struct {
		voucher []byte
		want    error
	}{
		"forged_voucher":      {forgedVoucher, ErrNotOwner},
		"voucher_other_lease": {otherLeaseRaw, ErrMismatch},
		"tampered_voucher":    {tampered, ErrBadSignature},
		"not_a_voucher":       {raw, ErrWrongDomain},
	} {
		t.Run(name, func(t *testing.T) {
			rc := testReceipt(t, tc.voucher)
			if _, err := SealReceipt(rc, provider); !errors.Is(err, tc.want) && !errors.Is(err, ErrInvalid) {
				t.Errorf("SealReceipt: %v, want %v", err, tc.want)
			}
			// A provider that skips SealReceipt's checks still cannot get
			// the receipt accepted.
			forged, err := Seal(rc, provider)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := OpenReceipt(forged); err == nil {
				t.Error("OpenReceipt accepted it")
			}
		})
	}
	// Signed by the renter instead of the provider.
	byRenter, err := Seal(testReceipt(t, sealedVoucher(t)), testKey(t, renterSeed))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenReceipt(byRenter); !errors.Is(err, ErrNotOwner) {
		t.Errorf("receipt signed by the renter: %v", err)
	}
}
