package golden

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	recordpb "github.com/libp2p/go-libp2p/core/record/pb"
	"google.golang.org/protobuf/proto"
)

// Vector is one protocol test vector (docs/protocol.md §5.2): a record
// as another implementation sees it, from its fields to the identifiers
// its sealed envelope gets. Everything in it is derived from the sealed
// envelope and the signing key, and checked on the way: the signature
// verifies over SignedBytes with plain Ed25519, so the doc's signing
// rule, not only libp2p's code, is what the vector pins.
type Vector struct {
	Kind        string `json:"kind"`
	Domain      string `json:"domain"`
	PayloadType string `json:"payload_type"`
	// KeySeed is the signer's Ed25519 seed (RFC 8032's 32-byte private
	// key): with it any implementation reproduces the signature, since
	// Ed25519 signatures are deterministic.
	KeySeed string `json:"signer_ed25519_seed_hex"`
	Signer  string `json:"signer"`
	// Fields is the payload decoded to JSON: CBOR maps as objects,
	// byte strings as {"bytes": "<hex>"}.
	Fields     any    `json:"fields"`
	Diagnostic string `json:"payload_diagnostic"` // RFC 8949 §8 notation
	Payload    string `json:"payload_hex"`
	// SignedBytes is what the signature covers: uvarint(len(domain)) ‖
	// domain ‖ uvarint(len(payload type)) ‖ payload type ‖
	// uvarint(len(payload)) ‖ payload.
	SignedBytes string `json:"signed_bytes_hex"`
	PublicKey   string `json:"envelope_public_key_hex"` // libp2p PublicKey protobuf
	Signature   string `json:"envelope_signature_hex"`
	Envelope    string `json:"envelope_hex"`
	RecordID    string `json:"record_id"`
	// Topic and MessageID are set for records gossiped on a topic: the
	// message ID is sha256(topic ‖ 0x00 ‖ envelope).
	Topic     string `json:"topic,omitempty"`
	MessageID string `json:"message_id_hex,omitempty"`
}

// VectorInput is what NewVector builds a vector from.
type VectorInput struct {
	Kind, Domain, PayloadType string
	Key                       crypto.PrivKey // Ed25519
	Payload                   []byte         // the record's canonical CBOR
	Envelope                  []byte         // the sealed record
	RecordID                  string
	Topic                     string // empty for records that are not gossiped
}

// NewVector builds the vector of a sealed record. It fails t when the
// envelope does not carry in.Payload under in.PayloadType, or when its
// signature does not verify over the documented signed bytes.
func NewVector(t testing.TB, in VectorInput) Vector {
	t.Helper()
	var env recordpb.Envelope
	if err := proto.Unmarshal(in.Envelope, &env); err != nil {
		t.Fatalf("%s: envelope: %v", in.Kind, err)
	}
	if string(env.PayloadType) != in.PayloadType || string(env.Payload) != string(in.Payload) {
		t.Fatalf("%s: envelope carries payload type %q and another payload than the record's", in.Kind, env.PayloadType)
	}
	pub, err := crypto.PublicKeyFromProto(env.PublicKey)
	if err != nil {
		t.Fatalf("%s: envelope key: %v", in.Kind, err)
	}
	rawPub, err := pub.Raw()
	if err != nil || pub.Type() != crypto.Ed25519 {
		t.Fatalf("%s: envelope key is not Ed25519 (%v)", in.Kind, err)
	}
	signed := SignedBytes(in.Domain, in.PayloadType, in.Payload)
	if !ed25519.Verify(rawPub, signed, env.Signature) {
		t.Fatalf("%s: signature does not verify over the documented signed bytes", in.Kind)
	}
	pubProto, err := crypto.MarshalPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	rawKey, err := in.Key.Raw()
	if err != nil || len(rawKey) != ed25519.PrivateKeySize {
		t.Fatalf("%s: signing key is not Ed25519 (%v)", in.Kind, err)
	}
	if !in.Key.GetPublic().Equals(pub) {
		t.Fatalf("%s: envelope is not signed by the vector's key", in.Kind)
	}
	fields, diag, err := describe(in.Payload)
	if err != nil {
		t.Fatalf("%s: payload: %v", in.Kind, err)
	}
	v := Vector{
		Kind: in.Kind, Domain: in.Domain, PayloadType: in.PayloadType,
		KeySeed:    hex.EncodeToString(rawKey[:ed25519.SeedSize]),
		Signer:     peerIDText(t, pub),
		Fields:     fields,
		Diagnostic: diag,
		Payload:    hex.EncodeToString(in.Payload), SignedBytes: hex.EncodeToString(signed),
		PublicKey: hex.EncodeToString(pubProto), Signature: hex.EncodeToString(env.Signature),
		Envelope: hex.EncodeToString(in.Envelope), RecordID: in.RecordID, Topic: in.Topic,
	}
	if in.Topic != "" {
		v.MessageID = hex.EncodeToString(MessageID(in.Topic, in.Envelope))
	}
	return v
}

// SignedBytes returns what a record's signature covers (libp2p's signed
// envelope rule): each of domain, payload type and payload prefixed by its
// length as an unsigned varint.
func SignedBytes(domain, payloadType string, payload []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(domain)))
	b = append(b, domain...)
	b = binary.AppendUvarint(b, uint64(len(payloadType)))
	b = append(b, payloadType...)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// MessageID is a gossip message's ID as docs/protocol.md §3.1 states it:
// sha256(topic ‖ 0x00 ‖ data). p2p's own rule is checked against the
// vectors in p2p's tests.
func MessageID(topic string, data []byte) []byte {
	h := sha256.New()
	h.Write([]byte(topic))
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)
}

// CheckVector renders v and compares it with the file at path (Check's
// -update rewrites it).
func CheckVector(t testing.TB, path string, v Vector) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	Check(t, path, string(b)+"\n")
}

// ReadVector reads a vector file and returns it with its payload and
// envelope bytes, for tests that decode what the file holds.
func ReadVector(t testing.TB, path string) (v Vector, payload, envelope []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read vector (run with -update to create): %v", err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if payload, err = hex.DecodeString(v.Payload); err != nil {
		t.Fatalf("%s: payload_hex: %v", path, err)
	}
	if envelope, err = hex.DecodeString(v.Envelope); err != nil {
		t.Fatalf("%s: envelope_hex: %v", path, err)
	}
	return v, payload, envelope
}

var describeMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{DefaultMapType: reflect.TypeOf(map[string]any(nil))}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// describe renders a CBOR payload as JSON-ready fields and as diagnostic
// notation.
func describe(payload []byte) (any, string, error) {
	var x any
	if err := describeMode.Unmarshal(payload, &x); err != nil {
		return nil, "", err
	}
	diag, err := cbor.Diagnose(payload)
	if err != nil {
		return nil, "", err
	}
	return jsonReady(x), diag, nil
}

// jsonReady replaces byte strings with {"bytes": hex}, which JSON would
// otherwise show as base64 indistinguishable from text.
func jsonReady(x any) any {
	switch x := x.(type) {
	case []byte:
		return map[string]string{"bytes": hex.EncodeToString(x)}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonReady(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonReady(e)
		}
		return out
	default:
		return x
	}
}

func peerIDText(t testing.TB, pub crypto.PubKey) string {
	t.Helper()
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}
