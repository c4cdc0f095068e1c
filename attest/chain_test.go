package attest

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestChainAppendAndContinue(t *testing.T) {
	s := honestSegment(t)
	for i, raw := range s.raws {
		e, err := OpenEntry(raw)
		if err != nil {
			t.Fatalf("OpenEntry %d: %v", i, err)
		}
		if e.Seq != uint64(i) {
			t.Errorf("entry %d has seq %d", i, e.Seq)
		}
		if i > 0 && e.Prev != RecordID(s.raws[i-1]).String() {
			t.Errorf("entry %d prev does not link", i)
		}
	}
	if got := s.entries[2].Telemetry.Fingerprint; got != RecordID(s.raws[0]).String() {
		t.Errorf("telemetry fingerprint = %s, want the fingerprint entry's ID", got)
	}
	if l := s.entries[2].Leases(); !slices.Equal(l, []string{leaseL1}) {
		t.Errorf("telemetry Leases() = %v", l)
	}
	if l := s.entries[0].Leases(); l != nil {
		t.Errorf("fingerprint Leases() = %v", l)
	}

	// Persist the head, restart, continue.
	c, _ := NewChain(s.key, nil)
	var last []byte
	for range 2 {
		last, _, _ = c.Append(t0, fingerprintOf(1))
	}
	b, err := MarshalHead(c.Head())
	if err != nil {
		t.Fatal(err)
	}
	h, err := UnmarshalHead(b)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := NewChain(s.key, h)
	if err != nil {
		t.Fatal(err)
	}
	raw, e, err := c2.Append(t0+1, &Telemetry{StartMs: t0 - windowMs, EndMs: t0,
		GPUs: []GPUTelemetry{{UUID: gpuUUID(0), Samples: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 2 || e.Prev != RecordID(last).String() || e.Telemetry.Fingerprint != RecordID(last).String() {
		t.Errorf("continued entry = seq %d prev %s fp %s", e.Seq, e.Prev, e.Telemetry.Fingerprint)
	}
	if _, err := OpenEntry(raw); err != nil {
		t.Fatal(err)
	}
}

func TestChainAppendRefuses(t *testing.T) {
	key := testKey(t, providerSeed)
	tel := &Telemetry{StartMs: t0 - windowMs, EndMs: t0, GPUs: []GPUTelemetry{{UUID: gpuUUID(0), Samples: 1}}}
	c, _ := NewChain(key, nil)
	if _, _, err := c.Append(t0, tel); !errors.Is(err, ErrChain) {
		t.Errorf("telemetry before a fingerprint: %v", err)
	}
	if _, _, err := c.Append(t0, fingerprintOf(1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Append(t0-1, fingerprintOf(1)); !errors.Is(err, ErrChain) {
		t.Errorf("time going back: %v", err)
	}
	bad := *tel
	bad.Fingerprint = fakeID("other")
	if _, _, err := c.Append(t0, &bad); !errors.Is(err, ErrChain) {
		t.Errorf("foreign fingerprint: %v", err)
	}
	if _, _, err := c.Append(t0, &JobEvent{Event: "exploded"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid body: %v", err)
	}
	if c.Head().Seq != 0 {
		t.Errorf("refused appends moved the head to %d", c.Head().Seq)
	}
	if _, err := NewChain(testKey(t, otherSeed), c.Head()); !errors.Is(err, ErrChain) {
		t.Errorf("head of another key: %v", err)
	}
}

func TestEntryValidate(t *testing.T) {
	prov := peerOf(t, providerSeed)
	fp := fingerprintOf(1)
	cases := []struct {
		name string
		e    Entry
		msg  string
	}{
		{"two_bodies", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindFingerprint, Fingerprint: fp, Job: &JobEvent{}}, "2 bodies"},
		{"kind_mismatch", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindJob, Fingerprint: fp}, "but the body is"},
		{"prev_on_seq0", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindFingerprint, Fingerprint: fp, Prev: fakeID("x")}, "prev"},
		{"no_prev", Entry{V: 1, Provider: prov, Seq: 3, AtMs: t0, Kind: KindFingerprint, Fingerprint: fp}, "missing record ID"},
		{"dup_uuid", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindFingerprint,
			Fingerprint: &Fingerprint{Driver: "1", CUDA: "1", GPUs: []GPUFact{h100(0), h100(0)}}}, "duplicate"},
		{"renter_without_lease", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindTelemetry, Telemetry: &Telemetry{
			StartMs: 1, EndMs: 2, Fingerprint: fakeID("f"), GPUs: []GPUTelemetry{{UUID: "g", Samples: 1, Renter: prov}}}}, "without a lease"},
		{"window_too_long", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindTelemetry, Telemetry: &Telemetry{
			StartMs: 1, EndMs: 2 + MaxWindowMs, Fingerprint: fakeID("f"), GPUs: []GPUTelemetry{{UUID: "g", Samples: 1}}}}, "exceeds"},
		{"bad_cc", Entry{V: 1, Provider: prov, AtMs: t0, Kind: KindFingerprint,
			Fingerprint: &Fingerprint{Driver: "1", CUDA: "1", GPUs: []GPUFact{{UUID: "g", Name: "n", MemoryMiB: 1, ComputeCap: "09.0", PowerLimitMW: 1}}}}, "major.minor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Validate = %v, want ErrInvalid mentioning %q", err, tc.msg)
			}
		})
	}
}

func TestHeadDecodeRejects(t *testing.T) {
	s := honestSegment(t)
	h := &Head{V: 1, Provider: s.entries[0].Provider, Seq: 1, ID: RecordID(s.raws[1]).String(), AtMs: t0}
	b, err := MarshalHead(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalHead(append(b, 0)); !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing byte: %v", err)
	}
	if _, err := UnmarshalHead(make([]byte, MaxHeadSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	bad := mustCBOR(t, map[string]any{"v": 1, "provider": h.Provider, "seq": 1, "id": "x", "at_ms": t0})
	if _, err := UnmarshalHead(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad id: %v", err)
	}
}
