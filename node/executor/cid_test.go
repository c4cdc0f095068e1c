package executor

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func TestCIDOf(t *testing.T) {
	// Cross-check against go-cid's own prefix sum.
	data := []byte("idlegrid")
	want, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.SHA2_256, MhLength: -1}.Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := CIDOf(data); got != want.String() {
		t.Fatalf("CIDOf = %s, want %s", got, want)
	}
	if err := VerifyCID(CIDOf(data), data); err != nil {
		t.Fatalf("VerifyCID: %v", err)
	}
	if err := VerifyCID(CIDOf(data), []byte("other")); !errors.Is(err, ErrCIDMismatch) {
		t.Fatalf("VerifyCID(other) = %v, want ErrCIDMismatch", err)
	}
}

func TestParseCIDRefuses(t *testing.T) {
	data := []byte("x")
	v0, _ := cid.Prefix{Version: 0, Codec: cid.DagProtobuf, MhType: multihash.SHA2_256, MhLength: -1}.Sum(data)
	dagpb, _ := cid.Prefix{Version: 1, Codec: cid.DagProtobuf, MhType: multihash.SHA2_256, MhLength: -1}.Sum(data)
	sha1, _ := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.SHA1, MhLength: -1}.Sum(data)
	for name, s := range map[string]string{
		"Empty":   "",
		"Garbage": "not-a-cid",
		"V0":      v0.String(),
		"DagPB":   dagpb.String(),
		"SHA1":    sha1.String(),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseCID(s); !errors.Is(err, ErrInvalidCID) {
				t.Fatalf("ParseCID(%q) = %v, want ErrInvalidCID", s, err)
			}
		})
	}
}

func TestVerifyingReader(t *testing.T) {
	data := bytes.Repeat([]byte("abc"), 10000)
	id := CIDOf(data)
	r, err := NewVerifyingReader(io.NopCloser(bytes.NewReader(data)), id)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll = %d bytes, %v", len(got), err)
	}
	bad := append(bytes.Clone(data[:len(data)-1]), 'x')
	r, _ = NewVerifyingReader(io.NopCloser(bytes.NewReader(bad)), id)
	if _, err := io.ReadAll(r); !errors.Is(err, ErrCIDMismatch) {
		t.Fatalf("ReadAll(tampered) = %v, want ErrCIDMismatch", err)
	}
}

func FuzzParseCID(f *testing.F) {
	f.Add(CIDOf([]byte("seed")))
	f.Add("bafkqaaa")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseCID(s)
		if err == nil && len(d) != 32 {
			t.Fatalf("digest of %d bytes", len(d))
		}
	})
}
