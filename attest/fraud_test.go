package attest

import (
	"errors"
	"strings"
	"testing"
)

func sealProof(t testing.TB, kind FraudKind, gpu string, entries [][]byte) []byte {
	t.Helper()
	f := &FraudProof{V: 1, Reporter: peerOf(t, reporterSeed), Kind: kind, Offender: peerOf(t, providerSeed),
		GPU: gpu, Entries: entries, AtMs: t0 + 10*windowMs}
	raw, err := Seal(f, testKey(t, reporterSeed)) // no evidence check: tests craft false proofs
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// equivocationPair returns two different signed entries with one seq.
func equivocationPair(t testing.TB) [][]byte {
	s := honestSegment(t)
	alt := *s.entries[3]
	alt.AtMs++
	raw, err := Seal(&alt, s.key)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{s.raws[3], raw}
}

// doubleLease returns a provider segment that starts L1 (renter 1) on GPU
// 0 and then starts L2 (renter 2) on it, without ending L1: raws[1:].
func doubleLease(t testing.TB, between ...Body) [][]byte {
	c, _ := NewChain(testKey(t, providerSeed), nil)
	var raws [][]byte
	at := t0
	add := func(b Body) {
		raw, _, err := c.Append(at, b)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
		at += windowMs
	}
	add(fingerprintOf(2))
	add(&JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}})
	for _, b := range between {
		add(b)
	}
	add(&JobEvent{Lease: leaseL2, Renter: peerOf(t, renter2Seed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}})
	return raws
}

func TestFraudProofsHold(t *testing.T) {
	offender := peerOf(t, providerSeed)
	t.Run("equivocation", func(t *testing.T) {
		got, err := VerifyFraudProof(sealProof(t, FraudEquivocation, "", equivocationPair(t)))
		if err != nil || got.String() != offender {
			t.Fatalf("VerifyFraudProof = %s, %v", got, err)
		}
	})
	t.Run("double_lease_started_started", func(t *testing.T) {
		raws := doubleLease(t)
		got, err := VerifyFraudProof(sealProof(t, FraudDoubleLease, gpuUUID(0), raws[1:]))
		if err != nil || got.String() != offender {
			t.Fatalf("VerifyFraudProof = %s, %v", got, err)
		}
	})
	t.Run("double_lease_with_entries_between", func(t *testing.T) {
		raws := doubleLease(t, fingerprintOf(2),
			&JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(1)}})
		if _, err := VerifyFraudProof(sealProof(t, FraudDoubleLease, gpuUUID(0), raws[1:])); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("double_lease_started_then_telemetry", func(t *testing.T) {
		c, _ := NewChain(testKey(t, providerSeed), nil)
		var raws [][]byte
		for i, b := range []Body{fingerprintOf(2),
			&JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}},
			&Telemetry{StartMs: t0 + windowMs, EndMs: t0 + 2*windowMs, GPUs: []GPUTelemetry{{UUID: gpuUUID(0), Samples: 1,
				Lease: leaseL2, Renter: peerOf(t, renter2Seed)}}}} {
			raw, _, err := c.Append(t0+int64(i)*windowMs, b)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
		if _, err := VerifyFraudProof(sealProof(t, FraudDoubleLease, gpuUUID(0), raws[1:])); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("seal_checks_evidence", func(t *testing.T) {
		f := &FraudProof{V: 1, Reporter: peerOf(t, reporterSeed), Kind: FraudEquivocation, Offender: offender,
			Entries: equivocationPair(t), AtMs: t0}
		if _, err := SealFraudProof(f, testKey(t, reporterSeed)); err != nil {
			t.Fatal(err)
		}
		f.Entries[1] = f.Entries[0]
		if _, err := SealFraudProof(f, testKey(t, reporterSeed)); !errors.Is(err, ErrFalseProof) {
			t.Errorf("sealing a false proof: %v", err)
		}
	})
}

func TestFalseFraudProofs(t *testing.T) {
	s := honestSegment(t)
	pair := equivocationPair(t)
	otherProvider := func() []byte {
		c, _ := NewChain(testKey(t, otherSeed), nil)
		var raw []byte
		for range 4 {
			raw, _, _ = c.Append(t0, fingerprintOf(1))
		}
		return raw // seq 3, like pair[0]
	}
	honestEnd := func() [][]byte {
		raws := doubleLease(t, &JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID,
			Event: JobFinished, GPUs: []string{gpuUUID(0)}})
		return raws[1:]
	}
	sameRenter := func() [][]byte {
		c, _ := NewChain(testKey(t, providerSeed), nil)
		var raws [][]byte
		for _, b := range []Body{fingerprintOf(1),
			&JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}},
			&JobEvent{Lease: leaseL2, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}}} {
			raw, _, err := c.Append(t0, b)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
		return raws[1:]
	}
	dl := doubleLease(t, fingerprintOf(2))
	cases := []struct {
		name, msg string
		kind      FraudKind
		gpu       string
		entries   [][]byte
	}{
		{"same_bytes", "same bytes", FraudEquivocation, "", [][]byte{pair[0], pair[0]}},
		{"different_seq", "not one seq", FraudEquivocation, "", [][]byte{s.raws[2], s.raws[3]}},
		{"different_providers", "the proof accuses", FraudEquivocation, "", [][]byte{pair[0], otherProvider()}},
		{"tampered_entry", "bad signature", FraudEquivocation, "", [][]byte{pair[0], flip(pair[1])}},
		{"broken_links", "not contiguous", FraudDoubleLease, gpuUUID(0), [][]byte{dl[1], dl[3]}},
		{"reordered", "not contiguous", FraudDoubleLease, gpuUUID(0), [][]byte{dl[2], dl[1], dl[3]}},
		{"end_event_between", "ends lease", FraudDoubleLease, gpuUUID(0), honestEnd()},
		{"same_renter", "both leases are renter", FraudDoubleLease, gpuUUID(0), sameRenter()},
		{"other_gpu", "does not show GPU", FraudDoubleLease, gpuUUID(1), dl[1:]},
		{"honest_lease_segment", "both entries show lease", FraudDoubleLease, gpuUUID(0), s.raws[1:5]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifyFraudProof(sealProof(t, tc.kind, tc.gpu, tc.entries))
			if !errors.Is(err, ErrFalseProof) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("VerifyFraudProof = %v, want ErrFalseProof mentioning %q", err, tc.msg)
			}
		})
	}
	t.Run("window_before_lease", func(t *testing.T) {
		// An honest late window: L2's window [t0, t0+60s] closes before L1
		// starts but is appended after L1's start. Not a double lease.
		c, _ := NewChain(testKey(t, providerSeed), nil)
		var raws [][]byte
		for i, b := range []Body{fingerprintOf(1),
			&JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}},
			&Telemetry{StartMs: t0, EndMs: t0 + windowMs, GPUs: []GPUTelemetry{{UUID: gpuUUID(0), Samples: 1, Lease: leaseL2, Renter: peerOf(t, renter2Seed)}}}} {
			raw, _, err := c.Append(t0+windowMs+int64(i), b)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
		if _, err := VerifyFraudProof(sealProof(t, FraudDoubleLease, gpuUUID(0), raws[1:])); !errors.Is(err, ErrFalseProof) {
			t.Fatalf("VerifyFraudProof = %v, want ErrFalseProof", err)
		}
	})
	t.Run("reporter_not_signer", func(t *testing.T) {
		f := &FraudProof{V: 1, Reporter: peerOf(t, reporterSeed), Kind: FraudEquivocation, Offender: peerOf(t, providerSeed),
			Entries: pair, AtMs: t0}
		raw, err := Seal(f, testKey(t, otherSeed))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyFraudProof(raw); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("VerifyFraudProof = %v, want ErrNotOwner", err)
		}
	})
	t.Run("too_many_entries", func(t *testing.T) {
		f := &FraudProof{V: 1, Reporter: peerOf(t, reporterSeed), Kind: FraudDoubleLease, Offender: peerOf(t, providerSeed),
			GPU: gpuUUID(0), Entries: make([][]byte, MaxProofEntries+1), AtMs: t0}
		for i := range f.Entries {
			f.Entries[i] = []byte{1}
		}
		if err := f.Validate(); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Validate = %v", err)
		}
	})
}

func flip(b []byte) []byte {
	c := append([]byte(nil), b...)
	c[len(c)-1] ^= 1
	return c
}
