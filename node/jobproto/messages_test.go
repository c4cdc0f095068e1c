package jobproto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
)

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{
		{Op: OpSpec, Lease: "bafylease"},
		{Op: OpArtifact, Lease: "l", CID: "bafkreimodule", Offset: 1 << 20},
		{Op: OpStatus, Lease: "l", After: 7, WaitMs: 20_000},
		{Op: OpLogs, Lease: "l", Offset: 10, Follow: true},
		{Op: OpResult, Lease: "l", Offset: 5},
		{Op: OpCancel, Lease: "l"},
		{Op: OpAttest, Lease: "l", After: 3, Follow: true},
		{Op: OpReceipt, Lease: "l"},
	} {
		b, err := EncodeRequest(&r)
		if err != nil {
			t.Fatalf("%s: encode: %v", r.Op, err)
		}
		got, err := DecodeRequest(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", r.Op, err)
		}
		if !reflect.DeepEqual(*got, r) {
			t.Errorf("%s: round trip = %+v, want %+v", r.Op, *got, r)
		}
	}
}

func TestRequestRejected(t *testing.T) {
	enc := func(r Request) []byte {
		b, err := attest.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, b := range map[string][]byte{
		"version":       enc(Request{V: 2, Op: OpSpec, Lease: "l"}),
		"unknown op":    enc(Request{V: 1, Op: "exec", Lease: "l"}),
		"no lease":      enc(Request{V: 1, Op: OpSpec}),
		"long lease":    enc(Request{V: 1, Op: OpSpec, Lease: string(bytes.Repeat([]byte("a"), 129))}),
		"negative":      enc(Request{V: 1, Op: OpLogs, Lease: "l", Offset: -1}),
		"long wait":     enc(Request{V: 1, Op: OpStatus, Lease: "l", WaitMs: MaxWaitMs + 1}),
		"artifact":      enc(Request{V: 1, Op: OpArtifact, Lease: "l"}),
		"no voucher":    enc(Request{V: 1, Op: OpVoucher, Lease: "l"}),
		"big voucher":   enc(Request{V: 1, Op: OpVoucher, Lease: "l", Voucher: make([]byte, MaxVoucherBytes+1)}),
		"too large":     make([]byte, MaxRequestBytes+1),
		"garbage":       []byte("not cbor"),
		"unknown field": append(enc(Request{V: 1, Op: OpSpec, Lease: "l"})[:0:0], 0xa1, 0x61, 'x', 0x01),
		"trailing":      append(enc(Request{V: 1, Op: OpSpec, Lease: "l"}), 0),
	} {
		if _, err := DecodeRequest(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	code := 3
	h := Header{Status: &Status{Version: 4, State: "failed", Reason: "exit 3", ExitCode: &code, OutputCID: "bafk", OutputSize: 10}, Size: 10, CID: "bafk"}
	b, err := EncodeHeader(&h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status == nil || *got.Status.ExitCode != 3 || got.Status.State != "failed" || got.Size != 10 {
		t.Errorf("round trip = %+v", got)
	}
	if got.Err() != nil {
		t.Errorf("Err = %v", got.Err())
	}
	refused := Header{Error: "no such lease", Code: CodeNotFound}
	b, _ = EncodeHeader(&refused)
	got, _ = DecodeHeader(b)
	var re *RemoteError
	if !errors.As(got.Err(), &re) || re.Code != CodeNotFound {
		t.Errorf("Err = %v, want RemoteError not_found", got.Err())
	}
	for name, bad := range map[string][]byte{
		"too large": make([]byte, MaxHeaderBytes+1),
		"version":   must(attest.Marshal(Header{V: 9})),
		"size":      must(attest.Marshal(Header{V: 1, Size: -1})),
		"state":     must(attest.Marshal(Header{V: 1, Status: &Status{}})),
	} {
		if _, err := DecodeHeader(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range []Request{{Op: OpSpec, Lease: "l"}, {Op: OpLogs, Lease: "l", Follow: true, Offset: 9}} {
		b, _ := EncodeRequest(&r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same request.
		again, err := EncodeRequest(r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		r2, err := DecodeRequest(again)
		if err != nil || !reflect.DeepEqual(r2, r) {
			t.Fatalf("round trip: %+v vs %+v (%v)", r2, r, err)
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	code := 1
	for _, h := range []Header{{Spec: []byte("image: x")}, {Status: &Status{State: "running", ExitCode: &code}}, {Error: "x", Code: CodeGone}} {
		b, _ := EncodeHeader(&h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			return
		}
		if _, err := EncodeHeader(h); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
	})
}
