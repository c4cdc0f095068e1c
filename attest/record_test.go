package attest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
)

// testRec and otherRec are two registered kinds used only by these tests.
type testRec struct {
	V    uint     `cbor:"v"`
	Name string   `cbor:"name"`
	N    uint64   `cbor:"n,omitempty"`
	Tags []string `cbor:"tags,omitempty"`
}

var testKind = Register(Kind{
	Name: "test", Domain: "idlegrid-test", PayloadType: []byte("/idlegrid/test/1"),
	Versions: []uint{1}, MaxSize: 4096,
})

func (testRec) RecordKind() *Kind { return testKind }

type otherRec struct {
	V uint `cbor:"v"`
}

var otherKind = Register(Kind{
	Name: "other", Domain: "idlegrid-other", PayloadType: []byte("/idlegrid/other/1"),
	Versions: []uint{1},
})

func (otherRec) RecordKind() *Kind { return otherKind }

// testKey returns a deterministic Ed25519 key so envelopes are reproducible
// (Ed25519 signatures are deterministic).
func testKey(t testing.TB, seed byte) crypto.PrivKey {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{seed}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// customRec lets a test sign arbitrary payload bytes under any domain and
// payload type, to produce envelopes Seal would refuse to make.
type customRec struct {
	domain, ptype string
	payload       []byte
}

func (c *customRec) Domain() string                 { return c.domain }
func (c *customRec) Codec() []byte                  { return []byte(c.ptype) }
func (c *customRec) MarshalRecord() ([]byte, error) { return c.payload, nil }
func (c *customRec) UnmarshalRecord([]byte) error   { return nil }

func sealCustom(t testing.TB, domain, ptype string, payload []byte) []byte {
	t.Helper()
	env, err := record.Seal(&customRec{domain, ptype, payload}, testKey(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustSeal(t testing.TB, rec Payload) []byte {
	t.Helper()
	raw, err := Seal(rec, testKey(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustCBOR(t testing.TB, v any) []byte {
	t.Helper()
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func deepArray(n int) any {
	var v any = []any{}
	for range n {
		v = []any{v}
	}
	return v
}

type openCase struct {
	name    string
	raw     func(t testing.TB) []byte
	max     int
	wantErr error
	wantMsg string // substring of the error message
}

func openCases() []openCase {
	good := func(t testing.TB) []byte { return mustSeal(t, testRec{V: 1, Name: "gpu", N: 7}) }
	custom := func(payload func(t testing.TB) []byte) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			return sealCustom(t, testKind.Domain, string(testKind.PayloadType), payload(t))
		}
	}
	return []openCase{
		{name: "valid", raw: good},
		{name: "valid_with_tags", raw: func(t testing.TB) []byte {
			return mustSeal(t, testRec{V: 1, Name: "x", Tags: []string{"a", "b"}})
		}},
		{name: "too_large_caller_limit", raw: good, max: 10, wantErr: ErrTooLarge, wantMsg: "attest.Open test: record too large"},
		{name: "too_large_kind_limit", raw: func(t testing.TB) []byte {
			return sealCustom(t, testKind.Domain, string(testKind.PayloadType),
				mustCBOR(t, testRec{V: 1, Name: strings.Repeat("x", 5000)}))
		}, wantErr: ErrTooLarge, wantMsg: "> limit 4096"},
		{name: "empty_input", raw: func(testing.TB) []byte { return nil }, wantErr: ErrMalformed},
		{name: "garbage_envelope", raw: func(testing.TB) []byte { return []byte{0xff, 0x00, 0x13} }, wantErr: ErrMalformed, wantMsg: "envelope"},
		{name: "non_canonical_envelope_extra_field", raw: func(t testing.TB) []byte {
			return append(good(t), 0x30, 0x01) // unknown protobuf field 6
		}, wantErr: ErrMalformed, wantMsg: "not in canonical form"},
		{name: "other_kind", raw: func(t testing.TB) []byte { return mustSeal(t, otherRec{V: 1}) },
			wantErr: ErrWrongDomain, wantMsg: "got a other record"},
		{name: "unregistered_payload_type", raw: func(t testing.TB) []byte {
			return sealCustom(t, "x", "/x/1", mustCBOR(t, testRec{V: 1}))
		}, wantErr: ErrWrongDomain, wantMsg: "unregistered payload type"},
		{name: "right_type_wrong_domain", raw: func(t testing.TB) []byte {
			return sealCustom(t, otherKind.Domain, string(testKind.PayloadType), mustCBOR(t, testRec{V: 1}))
		}, wantErr: ErrBadSignature},
		{name: "flipped_signature_byte", raw: func(t testing.TB) []byte {
			raw := good(t)
			raw[len(raw)-1] ^= 1 // the signature is the last field
			return raw
		}, wantErr: ErrBadSignature},
		{name: "tampered_payload", raw: func(t testing.TB) []byte {
			raw := good(t)
			i := bytes.Index(raw, []byte("gpu"))
			raw[i] = 'c'
			return raw
		}, wantErr: ErrBadSignature},
		{name: "unknown_version", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": 2, "name": "x", "future": true})
		}), wantErr: ErrUnknownVersion, wantMsg: "v=2"},
		{name: "missing_version", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"name": "x"})
		}), wantErr: ErrUnknownVersion, wantMsg: "v=0"},
		{name: "null_payload", raw: custom(func(testing.TB) []byte { return []byte{0xf6} }), wantErr: ErrUnknownVersion},
		{name: "payload_not_a_map", raw: custom(func(testing.TB) []byte { return []byte{0x01} }), wantErr: ErrMalformed},
		{name: "negative_version", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": -1})
		}), wantErr: ErrMalformed},
		{name: "unknown_field", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": 1, "name": "x", "extra": 1})
		}), wantErr: ErrMalformed, wantMsg: "unknown field"},
		{name: "duplicate_key", raw: custom(func(testing.TB) []byte {
			return []byte{0xa2, 0x61, 'v', 0x01, 0x61, 'v', 0x01}
		}), wantErr: ErrMalformed, wantMsg: "duplicate map key"},
		{name: "non_shortest_integer", raw: custom(func(testing.TB) []byte {
			return []byte{0xa2, 0x61, 'v', 0x18, 0x01, 0x64, 'n', 'a', 'm', 'e', 0x60}
		}), wantErr: ErrMalformed, wantMsg: "not canonical"},
		{name: "unsorted_keys", raw: custom(func(testing.TB) []byte {
			return []byte{0xa2, 0x64, 'n', 'a', 'm', 'e', 0x60, 0x61, 'v', 0x01}
		}), wantErr: ErrMalformed, wantMsg: "not canonical"},
		{name: "explicit_empty_optional", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": 1, "name": "x", "n": 0})
		}), wantErr: ErrMalformed, wantMsg: "not canonical"},
		{name: "wrong_field_type", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": 1, "name": 5})
		}), wantErr: ErrMalformed},
		{name: "invalid_utf8", raw: custom(func(testing.TB) []byte {
			return []byte{0xa2, 0x61, 'v', 0x01, 0x64, 'n', 'a', 'm', 'e', 0x61, 0xff}
		}), wantErr: ErrMalformed},
		{name: "indefinite_length", raw: custom(func(testing.TB) []byte {
			return []byte{0xbf, 0x61, 'v', 0x01, 0xff}
		}), wantErr: ErrMalformed},
		{name: "tagged_value", raw: custom(func(testing.TB) []byte {
			return []byte{0xa1, 0x61, 'v', 0xc1, 0x01}
		}), wantErr: ErrMalformed},
		{name: "trailing_bytes", raw: custom(func(t testing.TB) []byte {
			return append(mustCBOR(t, testRec{V: 1, Name: "x"}), 0x00)
		}), wantErr: ErrMalformed},
		{name: "too_deep", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": 1, "x": deepArray(40)})
		}), wantErr: ErrMalformed, wantMsg: "nested level"},
		{name: "too_many_elements", raw: custom(func(t testing.TB) []byte {
			return mustCBOR(t, map[string]any{"v": 1, "tags": make([]string, maxArrayElements+1)})
		}), max: 1 << 20, wantErr: ErrMalformed, wantMsg: "array"},
	}
}

func TestOpen(t *testing.T) {
	for _, tc := range openCases() {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.raw(t)
			got, signer, err := Open[testRec](raw, tc.max)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				want, _ := peer.IDFromPrivateKey(testKey(t, 1))
				if signer != want {
					t.Errorf("signer = %s, want %s", signer, want)
				}
				if got.V != 1 {
					t.Errorf("V = %d", got.V)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open error = %v, want %v", err, tc.wantErr)
			}
			if got != nil || signer != "" {
				t.Errorf("Open returned a value with an error: %v %q", got, signer)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestSealRoundTripIsDeterministic(t *testing.T) {
	in := testRec{V: 1, Name: "h100", N: 42, Tags: []string{"b", "a"}}
	a, b := mustSeal(t, in), mustSeal(t, in)
	if !bytes.Equal(a, b) {
		t.Fatal("two seals of one value differ")
	}
	if RecordID(a) != RecordID(b) {
		t.Fatal("record IDs differ")
	}
	out, _, err := Open[testRec](a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != in.Name || out.N != in.N || len(out.Tags) != 2 || out.Tags[0] != "b" {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
}

func TestSealRefusesUnknownVersion(t *testing.T) {
	_, err := Seal(testRec{V: 9}, testKey(t, 1))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("Seal v=9: %v, want ErrUnknownVersion", err)
	}
}

func TestSealRefusesOversize(t *testing.T) {
	_, err := Seal(testRec{V: 1, Name: strings.Repeat("x", 5000)}, testKey(t, 1))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Seal oversize: %v, want ErrTooLarge", err)
	}
}

func TestRecordID(t *testing.T) {
	raw := mustSeal(t, testRec{V: 1, Name: "x"})
	id := RecordID(raw)
	if id.Version() != 1 || id.Prefix().Codec != 0x55 || id.Prefix().MhType != 0x12 {
		t.Errorf("RecordID prefix = %+v, want CIDv1 raw sha2-256", id.Prefix())
	}
	if RecordID(append(raw, 0)) == id {
		t.Error("different bytes gave one ID")
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	for _, k := range []Kind{
		{Name: "dup-domain", Domain: testKind.Domain, PayloadType: []byte("/x/2"), Versions: []uint{1}},
		{Name: "dup-type", Domain: "x-2", PayloadType: testKind.PayloadType, Versions: []uint{1}},
		{Name: "no-versions", Domain: "x-3", PayloadType: []byte("/x/3")},
		{Name: "version-zero", Domain: "x-4", PayloadType: []byte("/x/4"), Versions: []uint{0}},
	} {
		t.Run(k.Name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			Register(k)
		})
	}
}

func FuzzOpen(f *testing.F) {
	for _, tc := range openCases() {
		f.Add(tc.raw(f))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, signer, err := Open[testRec](raw, 0)
		if err != nil {
			if got != nil || signer != "" {
				t.Fatal("value returned with error")
			}
			return
		}
		// An accepted record must re-encode to the payload it came from.
		if _, err := Marshal(got); err != nil {
			t.Fatalf("accepted record does not re-encode: %v", err)
		}
		if RecordID(raw) != RecordID(bytes.Clone(raw)) {
			t.Fatal("RecordID not deterministic")
		}
	})
}

// TestClaimedSignerNamesTheKeyWithoutChecking: the claimed signer of a
// sealed record is its author, also when the signature is spoiled (Open
// then refuses it), and nothing is claimed for bytes that are no
// canonical envelope.
func TestClaimedSignerNamesTheKeyWithoutChecking(t *testing.T) {
	priv := testKey(t, 7)
	want, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := Seal(&testRec{V: 1, Name: "claimed"}, priv)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open[testRec](raw, 0); err != nil {
		t.Fatal(err)
	}
	if got, ok := ClaimedSigner(raw); !ok || got != want {
		t.Fatalf("ClaimedSigner = %s, %v; want %s", got, ok, want)
	}
	spoiled := bytes.Clone(raw)
	spoiled[len(spoiled)-1] ^= 1
	if got, ok := ClaimedSigner(spoiled); !ok || got != want {
		t.Fatalf("spoiled signature: ClaimedSigner = %s, %v; want %s", got, ok, want)
	}
	if _, _, err := Open[testRec](spoiled, 0); err == nil {
		t.Fatal("a spoiled signature opened")
	}
	for _, bad := range [][]byte{nil, {0x0a}, raw[:len(raw)-3], append(bytes.Clone(raw), 0)} {
		if got, ok := ClaimedSigner(bad); ok {
			t.Errorf("ClaimedSigner(%x...) = %s, want nothing", bad[:min(len(bad), 8)], got)
		}
	}
}
