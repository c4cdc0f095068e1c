package attest

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	mh "github.com/multiformats/go-multihash"
)

// openReference is Open as it was before the fast path (envelope.go) and
// the decode-first version read (decodePayload): two envelope parses via
// core/record, the version probe, the strict decode, the canonical
// re-encode, with records of another protocol version marked
// ErrOtherVersion. Open must agree with it on every input: same value, same
// signer, same error text.
func openReference[T any, P interface {
	*T
	Payload
}](raw []byte, maxSize int) (*T, peer.ID, error) {
	var zero T
	k := P(&zero).RecordKind()
	if limit := k.maxSize(maxSize); len(raw) > limit {
		return nil, "", fmt.Errorf("attest.Open %s: %w: %d bytes > limit %d", k.Name, ErrTooLarge, len(raw), limit)
	}
	env, err := record.UnmarshalEnvelope(raw)
	if err != nil {
		return nil, "", fmt.Errorf("attest.Open %s: %w: envelope: %w", k.Name, ErrMalformed, err)
	}
	if again, err := env.Marshal(); err != nil || !bytes.Equal(again, raw) {
		return nil, "", fmt.Errorf("attest.Open %s: %w: envelope is not in canonical form", k.Name, ErrMalformed)
	}
	if !bytes.Equal(env.PayloadType, k.PayloadType) {
		got := fmt.Sprintf("unregistered payload type %q", env.PayloadType)
		if other, ok := KindByPayloadType(env.PayloadType); ok {
			got = fmt.Sprintf("a %s record", other.Name)
		}
		return nil, "", fmt.Errorf("attest.Open %s: %w: got %s", k.Name, ErrWrongDomain, got)
	}
	rr := &rawRecord{kind: k}
	if _, err := record.ConsumeTypedEnvelope(raw, rr); err != nil {
		return nil, "", fmt.Errorf("attest.Open %s: %w: %w", k.Name, ErrBadSignature, err)
	}
	signer, err := peer.IDFromPublicKey(env.PublicKey)
	if err != nil {
		return nil, "", fmt.Errorf("attest.Open %s: %w: signer key: %w", k.Name, ErrMalformed, err)
	}
	v, err := payloadVersion(rr.payload)
	if err != nil {
		return nil, "", fmt.Errorf("attest.Open %s: %w: payload: %w", k.Name, ErrMalformed, err)
	}
	if !k.supports(v) && v != 0 {
		return nil, "", fmt.Errorf("attest.Open %s: %w: %w: v=%d, supported %v", k.Name, ErrUnknownVersion, ErrOtherVersion, v, k.Versions)
	}
	if !k.supports(v) {
		return nil, "", fmt.Errorf("attest.Open %s: %w: v=%d, supported %v", k.Name, ErrUnknownVersion, v, k.Versions)
	}
	out := new(T)
	if err := strictDec.Unmarshal(rr.payload, out); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			err = fmt.Errorf("%w: %w", ErrOtherVersion, err)
		}
		return nil, "", fmt.Errorf("attest.Open %s: %w: payload: %w", k.Name, ErrMalformed, err)
	}
	if again, err := encMode.Marshal(out); err != nil || !bytes.Equal(again, rr.payload) {
		return nil, "", fmt.Errorf("attest.Open %s: %w: payload is not canonical CBOR", k.Name, ErrMalformed)
	}
	return out, signer, nil
}

func sameOpen[T any, P interface {
	*T
	Payload
}](t testing.TB, raw []byte) {
	t.Helper()
	got, gotSigner, gotErr := Open[T, P](raw, 0)
	want, wantSigner, wantErr := openReference[T, P](raw, 0)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || gotSigner != wantSigner || !reflect.DeepEqual(got, want) {
		t.Fatalf("Open and the reference disagree on %x:\nOpen:      %v, %q, %+v\nreference: %v, %q, %+v",
			raw, gotErr, gotSigner, got, wantErr, wantSigner, want)
	}
}

// mutations returns raw with each byte flipped (low and high bit), each
// prefix, and structural edits of the protobuf envelope.
func mutations(raw []byte) [][]byte {
	var out [][]byte
	if len(raw) < 80 {
		return nil
	}
	for i := range raw {
		for _, x := range []byte{0x01, 0x80} {
			m := bytes.Clone(raw)
			m[i] ^= x
			out = append(out, m)
		}
	}
	for n := 0; n < len(raw); n += max(1, len(raw)/64) {
		out = append(out, raw[:n])
	}
	out = append(out,
		append(bytes.Clone(raw), 0x30, 0x01),           // unknown field 6
		append(bytes.Clone(raw), 0x2a, 0x00),           // empty repeated signature
		append([]byte{0x12, 0x01, 'x'}, raw...),        // payload type before the key
		append(bytes.Clone(raw[:2]), raw...),           // key header twice
		append([]byte{0x0a, 0x00}, raw...),             // empty key first
		append(bytes.Clone(raw), raw[len(raw)-70:]...), // signature field twice
	)
	// A non-minimal length for the key (0xa4 0x00 for 36).
	out = append(out, append([]byte{raw[0], raw[1] | 0x80, 0x00}, raw[2:]...))
	return out
}

// TestOpenMatchesReference checks Open against openReference on every
// openCases record, a real telemetry entry, and thousands of mutations of
// both: the fast path accepts exactly what the general path does and
// reports the same errors.
func TestOpenMatchesReference(t *testing.T) {
	for _, tc := range openCases() {
		raw := tc.raw(t)
		sameOpen[testRec](t, raw)
		for _, m := range mutations(raw) {
			sameOpen[testRec](t, m)
		}
	}
	s := honestSegment(t)
	for i, raw := range s.raws {
		sameOpen[Entry](t, raw)
		if i == 2 {
			for _, m := range mutations(raw) {
				sameOpen[Entry](t, m)
			}
		}
	}
}

func FuzzOpenMatchesReference(f *testing.F) {
	for _, tc := range openCases() {
		f.Add(tc.raw(f))
	}
	for _, raw := range honestSegment(f).raws[:3] {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameOpen[testRec](t, raw)
		sameOpen[Entry](t, raw)
	})
}

// TestIsRecordIDFast checks the fast record-ID check against the full one
// (cid.Decode, codec and hash checks, canonical text) on real IDs and
// every single-character change of one.
func TestIsRecordIDFast(t *testing.T) {
	full := func(s string) bool {
		c, err := cid.Decode(s)
		if err != nil || c.Version() != 1 || c.Type() != cid.Raw {
			return false
		}
		dh, err := mh.Decode(c.Hash())
		return err == nil && dh.Code == mh.SHA2_256 && dh.Length == 32 && c.String() == s
	}
	var texts []string
	for i := range 50 {
		id := RecordID([]byte{byte(i)}).String()
		texts = append(texts, id, id[:len(id)-1], id+"a", strings.ToUpper(id))
		for j := range len(id) {
			for _, c := range "abz27AB=01 \n" {
				texts = append(texts, id[:j]+string(c)+id[j+1:])
			}
		}
	}
	texts = append(texts, fakeID("x"), "", "b", RecordID(nil).String())
	for _, s := range texts {
		fast := isRecordIDFast(s)
		if fast && !full(s) {
			t.Fatalf("fast check accepts %q, the full check does not", s)
		}
		if fast != isRecordID(s) || isRecordID(s) != full(s) {
			t.Fatalf("%q: fast %v, isRecordID %v, full %v", s, fast, isRecordID(s), full(s))
		}
		if full(s) && !fast {
			t.Fatalf("fast check misses canonical record ID %q", s)
		}
	}
}
