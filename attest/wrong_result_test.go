package attest

import (
	"errors"
	"testing"
	"time"
)

// finishedClaim returns a finished job event for jobCID with output out,
// signed by the provider of seed.
func finishedClaim(t testing.TB, seed byte, job, out string) []byte {
	t.Helper()
	c, _ := NewChain(testKey(t, seed), nil)
	raw, _, err := c.Append(t0, &JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: job, Event: JobFinished, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func wrongResultProof(t testing.TB, claims ...[]byte) *WrongResultProof {
	return &WrongResultProof{
		V: 1, Reporter: peerOf(t, reporterSeed), Offender: peerOf(t, providerSeed), Claims: claims,
		Spec: []byte("name: x"), Module: []byte("\x00asm\x01\x00\x00\x00"),
		Bounds: ReplayBounds{TimeMs: 1000, MemoryMiB: 64, OutputMiB: 1}, AtMs: t0 + windowMs,
	}
}

var (
	outRight = fakeID("right output")
	outWrong = fakeID("wrong output")
	now      = time.UnixMilli(t0 + 2*windowMs)
)

func TestWrongResultProofJudged(t *testing.T) {
	w := wrongResultProof(t, finishedClaim(t, providerSeed, jobCID, outWrong), finishedClaim(t, otherSeed, jobCID, outRight))
	raw, err := SealWrongResult(w, testKey(t, reporterSeed), now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenWrongResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := got.Claim(now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Offender.String() != peerOf(t, providerSeed) || c.Witness.String() != peerOf(t, otherSeed) || c.Job != jobCID {
		t.Fatalf("claim %+v", c)
	}
	if err := c.Judge(0, outRight); err != nil {
		t.Errorf("re-run agrees with the witness: %v", err)
	}
	if err := c.Judge(0, outWrong); !errors.Is(err, ErrFalseProof) {
		t.Errorf("re-run agrees with the accused: %v, want ErrFalseProof", err)
	}
	if err := c.Judge(0, fakeID("third")); !errors.Is(err, ErrUnprovable) {
		t.Errorf("re-run matches neither: %v, want ErrUnprovable", err)
	}
	if err := c.Judge(1, outRight); !errors.Is(err, ErrUnprovable) {
		t.Errorf("re-run failed: %v, want ErrUnprovable", err)
	}
}

func TestWrongResultClaimsRejected(t *testing.T) {
	off := finishedClaim(t, providerSeed, jobCID, outWrong)
	c, _ := NewChain(testKey(t, otherSeed), nil)
	started, _, err := c.Append(t0, &JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobStarted})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := NewChain(testKey(t, otherSeed), nil)
	failed, _, err := c2.Append(t0, &JobEvent{Lease: leaseL1, Renter: peerOf(t, renterSeed), Job: jobCID, Event: JobFinished, ExitCode: 2, Output: outRight})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][][]byte{
		"same provider":       {off, finishedClaim(t, providerSeed, jobCID, outRight)},
		"same output":         {off, finishedClaim(t, otherSeed, jobCID, outWrong)},
		"different job":       {off, finishedClaim(t, otherSeed, fakeID("other job"), outRight)},
		"accuses the witness": {finishedClaim(t, otherSeed, jobCID, outRight), off},
		"not finished":        {off, started},
		"exit code":           {off, failed},
		"garbage":             {off, []byte("not an entry")},
	}
	for name, claims := range cases {
		t.Run(name, func(t *testing.T) {
			w := wrongResultProof(t, claims...)
			if _, err := w.Claim(now); !errors.Is(err, ErrFalseProof) {
				t.Fatalf("Claim = %v, want ErrFalseProof", err)
			}
			if _, err := SealWrongResult(w, testKey(t, reporterSeed), now); err == nil {
				t.Fatal("sealed a false proof")
			}
		})
	}
	t.Run("future", func(t *testing.T) {
		w := wrongResultProof(t, off, finishedClaim(t, otherSeed, jobCID, outRight))
		if _, err := w.Claim(time.UnixMilli(t0 - 10*claimSkewMs)); !errors.Is(err, ErrFalseProof) {
			t.Fatalf("Claim = %v, want ErrFalseProof", err)
		}
	})
}

func TestWrongResultBoundsValidated(t *testing.T) {
	claims := [][]byte{finishedClaim(t, providerSeed, jobCID, outWrong), finishedClaim(t, otherSeed, jobCID, outRight)}
	for name, mod := range map[string]func(w *WrongResultProof){
		"time":         func(w *WrongResultProof) { w.Bounds.TimeMs = MaxReplayTimeMs + 1 },
		"memory":       func(w *WrongResultProof) { w.Bounds.MemoryMiB = 0 },
		"output":       func(w *WrongResultProof) { w.Bounds.OutputMiB = MaxReplayOutputMiB + 1 },
		"module":       func(w *WrongResultProof) { w.Module = make([]byte, MaxProofModuleSize+1) },
		"spec":         func(w *WrongResultProof) { w.Spec = nil },
		"three claims": func(w *WrongResultProof) { w.Claims = append(w.Claims, w.Claims[0]) },
	} {
		w := wrongResultProof(t, claims...)
		mod(w)
		if err := w.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
	w := wrongResultProof(t, claims...)
	raw, err := Seal(w, testKey(t, otherSeed)) // signed by someone else than the reporter
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWrongResult(raw); err == nil {
		t.Error("opened a proof signed by another key than its reporter's")
	}
}

func FuzzOpenWrongResult(f *testing.F) {
	w := wrongResultProof(f, finishedClaim(f, providerSeed, jobCID, outWrong), finishedClaim(f, otherSeed, jobCID, outRight))
	raw, err := SealWrongResult(w, testKey(f, reporterSeed), now)
	if err != nil {
		f.Fatal(err)
	}
	seedAll(f, raw)
	f.Fuzz(func(t *testing.T, raw []byte) {
		w, err := OpenWrongResult(raw)
		if err != nil {
			if w != nil {
				t.Fatal("proof returned with an error")
			}
			return
		}
		if len(raw) > MaxFraudProofSize {
			t.Fatalf("accepted %d bytes", len(raw))
		}
		if c, err := w.Claim(now); err == nil {
			_ = c.Judge(0, c.WitnessOutput)
		}
	})
}
