package executor

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// CIDOf returns the CIDv1 (raw codec, sha2-256) of data.
func CIDOf(data []byte) string {
	sum := sha256.Sum256(data)
	return cidFromSum(sum[:])
}

func cidFromSum(sum []byte) string {
	mh, err := multihash.Encode(sum, multihash.SHA2_256)
	if err != nil {
		// Encode fails only for an unknown code or a wrong digest length,
		// neither of which can happen here.
		panic(fmt.Sprintf("executor: multihash.Encode: %v", err))
	}
	return cid.NewCidV1(cid.Raw, mh).String()
}

// ParseCID parses s and returns its sha2-256 digest. Only CIDv1 with the raw
// codec and a sha2-256 multihash are accepted: that is what this package
// produces, and accepting other hashes would let a peer pick a weak one.
func ParseCID(s string) ([]byte, error) {
	c, err := cid.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCID, s, err)
	}
	p := c.Prefix()
	if p.Version != 1 || p.Codec != cid.Raw || p.MhType != multihash.SHA2_256 {
		return nil, fmt.Errorf("%w: %q: want cidv1 raw sha2-256", ErrInvalidCID, s)
	}
	dm, err := multihash.Decode(c.Hash())
	if err != nil || len(dm.Digest) != sha256.Size {
		return nil, fmt.Errorf("%w: %q: bad multihash", ErrInvalidCID, s)
	}
	return dm.Digest, nil
}

// VerifyCID reports whether data hashes to id: nil, ErrInvalidCID or
// ErrCIDMismatch.
func VerifyCID(id string, data []byte) error {
	want, err := ParseCID(id)
	if err != nil {
		return err
	}
	got := sha256.Sum256(data)
	if !bytes.Equal(want, got[:]) {
		return fmt.Errorf("%w: %s", ErrCIDMismatch, id)
	}
	return nil
}

// verifyingReader passes r through and, at EOF, returns ErrCIDMismatch
// instead of io.EOF when the bytes read do not hash to the expected digest,
// so that a streaming consumer cannot mistake tampered bytes for a
// complete artifact.
type verifyingReader struct {
	r    io.Reader
	c    io.Closer
	id   string
	want []byte
	h    hash.Hash
	err  error
}

// NewVerifyingReader wraps rc so that it fails at EOF when its content does
// not match id. Close closes rc.
func NewVerifyingReader(rc io.ReadCloser, id string) (io.ReadCloser, error) {
	want, err := ParseCID(id)
	if err != nil {
		return nil, err
	}
	return &verifyingReader{r: rc, c: rc, id: id, want: want, h: sha256.New()}, nil
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if !bytes.Equal(v.h.Sum(nil), v.want) {
			err = fmt.Errorf("%w: %s", ErrCIDMismatch, v.id)
		}
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.c.Close() }
