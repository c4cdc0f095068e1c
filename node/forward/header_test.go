package forward

import (
	"errors"
	"strings"
	"testing"
)

var headerCases = []struct {
	name string
	raw  []byte
	want Header
	ok   bool
}{
	{"ok", []byte("\x01\x1f\x90\x04abcd"), Header{LeaseID: "abcd", Port: 8080}, true},
	{"short", []byte("\x01\x1f"), Header{}, false},
	{"version", []byte("\x02\x1f\x90\x01a"), Header{}, false},
	{"port_zero", []byte("\x01\x00\x00\x01a"), Header{}, false},
	{"length_over", []byte("\x01\x1f\x90\x05abcd"), Header{}, false},
	{"length_under", []byte("\x01\x1f\x90\x03abcd"), Header{}, false},
	{"empty_id", []byte("\x01\x1f\x90\x00"), Header{}, false},
	{"control_char", []byte("\x01\x1f\x90\x02a\n"), Header{}, false},
	{"too_big", append([]byte("\x01\x1f\x90\xff"), strings.Repeat("a", 255)...), Header{}, false},
}

func TestDecodeHeader(t *testing.T) {
	for _, tc := range headerCases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := DecodeHeader(tc.raw)
			if tc.ok != (err == nil) {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("err %v is not ErrMalformed", err)
			}
			if h != tc.want {
				t.Errorf("header %+v, want %+v", h, tc.want)
			}
		})
	}
	if _, err := (Header{LeaseID: strings.Repeat("a", 129), Port: 1}).Encode(); err == nil {
		t.Error("Encode accepts an over-long lease ID")
	}
}

func TestReplyRoundTrip(t *testing.T) {
	for _, err := range []error{nil, ErrRefused, ErrNotFound, ErrUnavailable, errors.New("dial")} {
		r, derr := DecodeReply(replyFor(err).Encode())
		if derr != nil {
			t.Fatal(derr)
		}
		want := err
		if err != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, ErrNotFound) {
			want = ErrUnavailable
		}
		if got := r.Err(); (got == nil) != (want == nil) || (want != nil && !errors.Is(got, want)) {
			t.Errorf("reply for %v: %v", err, got)
		}
	}
	if len(replyFor(errors.New(strings.Repeat("x", 2000))).Encode()) > MaxReplyBytes {
		t.Error("a long reason is not cut to MaxReplyBytes")
	}
	if _, err := DecodeReply([]byte{9}); err == nil {
		t.Error("unknown code decodes")
	}
}

// FuzzDecodeHeader: any frame either fails as ErrMalformed or round-trips.
func FuzzDecodeHeader(f *testing.F) {
	for _, tc := range headerCases {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		enc, err := h.Encode()
		if err != nil || string(enc) != string(b) {
			t.Fatalf("round trip: %q -> %+v -> %q, %v", b, h, enc, err)
		}
		if _, err := DecodeReply(b); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
	})
}
