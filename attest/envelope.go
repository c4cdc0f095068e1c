package attest

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/crypto/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	mh "github.com/multiformats/go-multihash"
)

// This file is Open's fast path. It accepts only envelopes whose bytes are
// exactly what go-libp2p's Envelope.Marshal writes for an Ed25519 signer
// (the only key type idlegrid nodes use), and for those it does what the
// general path does (record.UnmarshalEnvelope, the canonical re-marshal,
// record.ConsumeTypedEnvelope) with one pass over the bytes. Everything
// else, including every malformed input, takes the general path, so the
// set of records Open accepts, and the error each rejected record gets,
// are the general path's.

// Protobuf keys (field number << 3 | wire type) of core/record/pb.Envelope
// and core/crypto/pb.PublicKey, in the order proto.Marshal writes them.
const (
	envKeyPublicKey   = 1<<3 | 2
	envKeyPayloadType = 2<<3 | 2
	envKeyPayload     = 3<<3 | 2
	envKeySignature   = 5<<3 | 2
	pubKeyKeyType     = 1 << 3 // varint wire type 0
	pubKeyKeyData     = 2<<3 | 2
	ed25519KeyLen     = 32
)

// fastEnvelope is an envelope split by parseCanonicalEd25519. Its slices
// alias the raw bytes.
type fastEnvelope struct {
	pubKeyProto []byte // the marshalled crypto.pb.PublicKey
	pubKey      []byte // its 32 key bytes
	payloadType []byte
	payload     []byte
	signature   []byte
}

// parseCanonicalEd25519 splits raw if, and only if, it is the canonical
// protobuf encoding of an Envelope with an Ed25519 public key and a
// non-empty payload type, payload and signature:
//
//	0x0a 0x24 [0x08 0x01 0x12 0x20 <32-byte key>]
//	0x12 len payload_type  0x1a len payload  0x2a len signature
//
// with minimal varint lengths, in field-number order, nothing else. This
// is byte for byte what proto.Marshal writes for such an envelope (proto3
// omits empty bytes fields, proto2 writes required fields, fields go in
// number order, varints are minimal), so proto.Unmarshal followed by
// Envelope.Marshal reproduces raw exactly: the general path would find it
// canonical too.
func parseCanonicalEd25519(raw []byte) (fastEnvelope, bool) {
	var e fastEnvelope
	// public_key: a 36-byte message of type and data.
	const pkLen = 4 + ed25519KeyLen
	if len(raw) < 2+pkLen || raw[0] != envKeyPublicKey || raw[1] != pkLen ||
		raw[2] != pubKeyKeyType || raw[3] != byte(pb.KeyType_Ed25519) ||
		raw[4] != pubKeyKeyData || raw[5] != ed25519KeyLen {
		return e, false
	}
	e.pubKeyProto = raw[2 : 2+pkLen]
	e.pubKey = raw[6 : 2+pkLen]
	rest := raw[2+pkLen:]
	var ok bool
	if e.payloadType, rest, ok = bytesField(rest, envKeyPayloadType); !ok {
		return e, false
	}
	if e.payload, rest, ok = bytesField(rest, envKeyPayload); !ok {
		return e, false
	}
	if e.signature, rest, ok = bytesField(rest, envKeySignature); !ok {
		return e, false
	}
	return e, len(rest) == 0
}

// peerID is peer.IDFromPublicKey(pub) for the envelope's key without
// re-marshalling it: that function marshals the key to exactly
// e.pubKeyProto (crypto.MarshalPublicKey of an Ed25519 key is type 1 and
// the 32 bytes, which is what parseCanonicalEd25519 checked raw holds)
// and, with inlining on and 36 bytes <= peer's 42-byte inline limit,
// wraps it in an identity multihash: 0x00, length, bytes.
func (e *fastEnvelope) peerID(pub crypto.PubKey) (peer.ID, error) {
	if !peer.AdvancedEnableInlining {
		return peer.IDFromPublicKey(pub)
	}
	b := make([]byte, 0, 2+len(e.pubKeyProto))
	b = append(b, byte(mh.IDENTITY), byte(len(e.pubKeyProto)))
	return peer.ID(append(b, e.pubKeyProto...)), nil
}

// bytesField reads one non-empty length-delimited field with the given
// one-byte key and a minimally encoded length.
func bytesField(b []byte, key byte) (field, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != key {
		return nil, nil, false
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || w != uvarintLen(n) || n == 0 || n > uint64(len(b)-1-w) {
		return nil, nil, false
	}
	start := 1 + w
	return b[start : start+int(n)], b[start+int(n):], true
}

func uvarintLen(n uint64) int {
	w := 1
	for n >= 0x80 {
		n >>= 7
		w++
	}
	return w
}

// unmarshalEd25519 builds the public key exactly as
// crypto.PublicKeyFromProto does for KeyType Ed25519: through the
// registered unmarshaller.
func unmarshalEd25519(key []byte) (crypto.PubKey, error) {
	um, ok := crypto.PubKeyUnmarshallers[pb.KeyType_Ed25519]
	if !ok {
		return nil, crypto.ErrBadKeyType
	}
	return um(key)
}

// signedPrefix returns the start of what an envelope of kind k signs:
// uvarint(len(domain)) domain uvarint(len(payload type)) payload type, as
// in go-libp2p core/record makeUnsigned. The payload follows, with its
// own uvarint length.
//
// Register computes it once; a Kind that was not registered gets it
// computed on each call.
func (k *Kind) signedPrefix() []byte {
	if k.prefix != nil {
		return k.prefix
	}
	return makeSignedPrefix(k.Domain, k.PayloadType)
}

func makeSignedPrefix(domain string, payloadType []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(domain)))
	b = append(b, domain...)
	b = binary.AppendUvarint(b, uint64(len(payloadType)))
	return append(b, payloadType...)
}

var unsignedPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// verifySignature checks sig over domain ‖ payload type ‖ payload exactly
// as core/record's Envelope.validate does, with the same errors.
func verifySignature(k *Kind, pub crypto.PubKey, payload, sig []byte) error {
	bp := unsignedPool.Get().(*[]byte)
	msg := append((*bp)[:0], k.signedPrefix()...)
	msg = binary.AppendUvarint(msg, uint64(len(payload)))
	msg = append(msg, payload...)
	valid, err := pub.Verify(msg, sig)
	if cap(msg) <= 256<<10 {
		*bp = msg[:0]
		unsignedPool.Put(bp)
	}
	// The same errors, and wrapping, as record.ConsumeTypedEnvelope.
	if err != nil {
		return fmt.Errorf("failed to validate envelope: %w", fmt.Errorf("failed while verifying signature: %w", err))
	}
	if !valid {
		return fmt.Errorf("failed to validate envelope: %w", record.ErrInvalidSignature)
	}
	return nil
}

// versionField caches, per payload type, the index of its top-level
// unsigned field tagged `cbor:"v"` (-1: none, or a shape where decoding
// into T says nothing about what payloadVersion would read).
var versionField sync.Map // reflect.Type -> int

// versionOf returns the "v" field of a payload that the strict decoder has
// accepted. Strict decoding succeeded with the very options payloadVersion
// uses, minus unknown-field rejection, so payloadVersion would succeed on
// the same bytes and read the same number: the map has at most one "v"
// key (duplicates are rejected), and its value fits T's unsigned field,
// hence a uint. ok is false when T has no such field; the caller then
// reads the version the general way.
func versionOf(out any) (uint, bool) {
	rv := reflect.ValueOf(out).Elem()
	t := rv.Type()
	idx, found := versionField.Load(t)
	if !found {
		idx = findVersionField(t)
		versionField.Store(t, idx)
	}
	i := idx.(int)
	if i < 0 {
		return 0, false
	}
	return uint(rv.Field(i).Uint()), true
}

func findVersionField(t reflect.Type) int {
	if t.Kind() != reflect.Struct {
		return -1
	}
	idx := -1
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("cbor")
		if f.Name == "_" || f.Anonymous {
			// toarray structs and embedded structs change what the
			// top-level keys are: leave them to the general path.
			return -1
		}
		if tag == "v" && f.IsExported() {
			if idx >= 0 {
				return -1
			}
			switch f.Type.Kind() {
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				idx = i
			default:
				return -1
			}
		}
	}
	return idx
}

// ClaimedSigner returns the peer whose key a canonical Ed25519 envelope
// names, without checking its signature: cheap enough for a budget that
// decides whether the signature is worth checking at all. A false claim
// costs whoever passed it on the rejection Open gives it next. false: raw
// is no such envelope (Open decides what it is).
func ClaimedSigner(raw []byte) (peer.ID, bool) {
	e, ok := parseCanonicalEd25519(raw)
	if !ok {
		return "", false
	}
	pub, err := unmarshalEd25519(e.pubKey)
	if err != nil {
		return "", false
	}
	id, err := e.peerID(pub)
	return id, err == nil
}
