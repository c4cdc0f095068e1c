package attest

import (
	"testing"
)

// Fuzz targets for every decoder of this package's records. Each is
// seeded with valid records, truncations and forgeries, and checks that
// decoding never panics and accepts only what it should.
// Run one with: go test ./attest -run '^$' -fuzz '^FuzzOpenEntry$' -fuzztime 20s

func seedAll(f *testing.F, raws ...[]byte) {
	for _, raw := range raws {
		f.Add(raw)
		f.Add(raw[:len(raw)/2])
	}
	f.Add([]byte{})
}

func FuzzOpenEntry(f *testing.F) {
	s := honestSegment(f)
	seedAll(f, s.raws...)
	forged, err := Seal(s.entries[2], testKey(f, otherSeed))
	if err == nil {
		f.Add(forged)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		claimed, claims := ClaimedSigner(raw)
		e, err := OpenEntry(raw)
		if err == nil && (!claims || claimed.String() != e.Provider) {
			// Every honest envelope is canonical, and its claim is its signer.
			t.Fatalf("an entry of %s opened, but ClaimedSigner says %q (%v)", e.Provider, claimed, claims)
		}
		if err != nil {
			if e != nil {
				t.Fatal("entry returned with an error")
			}
			return
		}
		if len(raw) > MaxEntrySize {
			t.Fatalf("accepted %d bytes", len(raw))
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("accepted an invalid entry: %v", err)
		}
		_ = Verify([][]byte{raw}, VerifyOptions{NowMs: t0})
	})
}

func FuzzVerify(f *testing.F) {
	s := honestSegment(f)
	f.Add(s.raws[0], s.raws[2], s.raws[3])
	f.Add(s.raws[1], s.raws[1], s.raws[5])
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		r := Verify([][]byte{a, b, c}, VerifyOptions{NowMs: t0, KnownUUIDs: map[string]string{gpuUUID(0): "x"},
			Lease: &LeaseScope{ID: leaseL1, StartMs: t0, EndMs: t0 + windowMs, GPUs: []string{gpuUUID(0)}}})
		if len(r.Findings) < len(Checks) {
			t.Fatalf("%d findings for %d checks", len(r.Findings), len(Checks))
		}
	})
}

func FuzzOpenVoucher(f *testing.F) {
	seedAll(f, sealedVoucher(f))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := OpenVoucher(raw)
		if err != nil {
			return
		}
		if err := v.Validate(); err != nil || len(raw) > MaxVoucherSize {
			t.Fatalf("accepted an invalid voucher (%d bytes): %v", len(raw), err)
		}
	})
}

func FuzzOpenReceipt(f *testing.F) {
	raw, err := SealReceipt(testReceipt(f, sealedVoucher(f)), testKey(f, providerSeed))
	if err != nil {
		f.Fatal(err)
	}
	seedAll(f, raw)
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, v, err := OpenReceipt(raw)
		if err != nil {
			return
		}
		if r.Lease != v.Lease || r.Renter != v.Renter || r.Provider != v.Provider || len(raw) > MaxReceiptSize {
			t.Fatalf("accepted a mismatched receipt %+v / %+v", r, v)
		}
	})
}

func FuzzVerifyFraudProof(f *testing.F) {
	seedAll(f, sealProof(f, FraudEquivocation, "", equivocationPair(f)))
	dl := doubleLease(f)
	seedAll(f, sealProof(f, FraudDoubleLease, gpuUUID(0), dl[1:]))
	f.Fuzz(func(t *testing.T, raw []byte) {
		offender, err := VerifyFraudProof(raw)
		if err != nil {
			if offender != "" {
				t.Fatal("offender returned with an error")
			}
			return
		}
		p, err := OpenFraudProof(raw)
		if err != nil || p.Offender != offender.String() || len(raw) > MaxFraudProofSize {
			t.Fatalf("accepted proof does not reopen: %v", err)
		}
	})
}

func FuzzUnmarshalHead(f *testing.F) {
	h := &Head{V: 1, Provider: peerOf(f, providerSeed), Seq: 5, ID: fakeID("e"), AtMs: t0, Fingerprint: fakeID("f")}
	b, err := MarshalHead(h)
	if err != nil {
		f.Fatal(err)
	}
	seedAll(f, b)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := UnmarshalHead(b)
		if err != nil {
			return
		}
		again, err := MarshalHead(h)
		if err != nil || string(again) != string(b) {
			t.Fatalf("accepted head does not re-encode to its bytes: %v", err)
		}
	})
}
