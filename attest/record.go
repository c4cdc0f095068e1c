package attest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	mh "github.com/multiformats/go-multihash"
)

// rawRecord adapts already-encoded payload bytes to core/record.Record so
// that the libp2p envelope code does the signing and verification; the
// payload itself is decoded by us, strictly, after the signature checks out.
type rawRecord struct {
	kind    *Kind
	payload []byte
}

func (r *rawRecord) Domain() string                 { return r.kind.Domain }
func (r *rawRecord) Codec() []byte                  { return r.kind.PayloadType }
func (r *rawRecord) MarshalRecord() ([]byte, error) { return r.payload, nil }
func (r *rawRecord) UnmarshalRecord(b []byte) error { r.payload = b; return nil }

// Seal encodes rec as canonical CBOR, signs it with key under the kind's
// domain and returns the marshalled envelope. It refuses payload versions
// the kind does not list, so a node never publishes what it would reject.
func Seal(rec Payload, key crypto.PrivKey) ([]byte, error) {
	if rec == nil || key == nil {
		return nil, errors.New("attest.Seal: nil record or key")
	}
	k := rec.RecordKind()
	payload, err := Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("attest.Seal %s: %w", k.Name, err)
	}
	v, err := payloadVersion(payload)
	if err != nil {
		return nil, fmt.Errorf("attest.Seal %s: read version: %w", k.Name, err)
	}
	if !k.supports(v) {
		return nil, fmt.Errorf("attest.Seal %s: %w: v=%d, supported %v", k.Name, ErrUnknownVersion, v, k.Versions)
	}
	env, err := record.Seal(&rawRecord{kind: k, payload: payload}, key)
	if err != nil {
		return nil, fmt.Errorf("attest.Seal %s: %w", k.Name, err)
	}
	raw, err := env.Marshal()
	if err != nil {
		return nil, fmt.Errorf("attest.Seal %s: marshal envelope: %w", k.Name, err)
	}
	if limit := k.maxSize(0); len(raw) > limit {
		return nil, fmt.Errorf("attest.Seal %s: %w: %d bytes > limit %d", k.Name, ErrTooLarge, len(raw), limit)
	}
	return raw, nil
}

// Open verifies and decodes a record of the kind T belongs to, returning
// the payload and the peer that signed it. maxSize <= 0 means the kind's
// default limit. The checks run cheapest first and nothing is parsed before
// the size check:
//
//  1. size <= maxSize (ErrTooLarge)
//  2. the envelope parses and is in canonical protobuf form, so a relay
//     cannot change the record's ID without breaking it (ErrMalformed)
//  3. the payload type is T's (ErrWrongDomain)
//  4. the signature verifies under T's domain (ErrBadSignature)
//  5. the payload version is one T's kind supports (ErrUnknownVersion)
//  6. the payload decodes strictly and re-encodes to the same bytes
//     (ErrMalformed)
//
// Semantic checks (expiry, field ranges) belong to the caller.
func Open[T any, P interface {
	*T
	Payload
}](raw []byte, maxSize int) (*T, peer.ID, error) {
	var zero T
	k := P(&zero).RecordKind()
	if limit := k.maxSize(maxSize); len(raw) > limit {
		return nil, "", fmt.Errorf("attest.Open %s: %w: %d bytes > limit %d", k.Name, ErrTooLarge, len(raw), limit)
	}
	var (
		payload []byte
		signer  peer.ID
	)
	if fe, ok := parseCanonicalEd25519(raw); ok {
		// Steps 2-4 in one pass over raw (see envelope.go): raw is a
		// canonical envelope by construction, so only the payload type,
		// the key and the signature remain to check, in the general
		// path's order and with its errors.
		if !bytes.Equal(fe.payloadType, k.PayloadType) {
			return nil, "", wrongDomain(k, fe.payloadType)
		}
		pub, err := unmarshalEd25519(fe.pubKey)
		if err != nil {
			// Unreachable with the stock unmarshaller (32 bytes is the
			// only length it checks); the general path reports it.
			return nil, "", fmt.Errorf("attest.Open %s: %w: envelope: %w", k.Name, ErrMalformed, err)
		}
		if err := verifySignature(k, pub, fe.payload, fe.signature); err != nil {
			return nil, "", fmt.Errorf("attest.Open %s: %w: %w", k.Name, ErrBadSignature, err)
		}
		if signer, err = fe.peerID(pub); err != nil {
			return nil, "", fmt.Errorf("attest.Open %s: %w: signer key: %w", k.Name, ErrMalformed, err)
		}
		payload = fe.payload
	} else {
		env, err := record.UnmarshalEnvelope(raw)
		if err != nil {
			return nil, "", fmt.Errorf("attest.Open %s: %w: envelope: %w", k.Name, ErrMalformed, err)
		}
		if again, err := env.Marshal(); err != nil || !bytes.Equal(again, raw) {
			return nil, "", fmt.Errorf("attest.Open %s: %w: envelope is not in canonical form", k.Name, ErrMalformed)
		}
		if !bytes.Equal(env.PayloadType, k.PayloadType) {
			return nil, "", wrongDomain(k, env.PayloadType)
		}
		rr := &rawRecord{kind: k}
		if _, err := record.ConsumeTypedEnvelope(raw, rr); err != nil {
			return nil, "", fmt.Errorf("attest.Open %s: %w: %w", k.Name, ErrBadSignature, err)
		}
		if signer, err = peer.IDFromPublicKey(env.PublicKey); err != nil {
			return nil, "", fmt.Errorf("attest.Open %s: %w: signer key: %w", k.Name, ErrMalformed, err)
		}
		payload = rr.payload
	}
	out, err := decodePayload[T](k, payload)
	if err != nil {
		return nil, "", err
	}
	return out, signer, nil
}

func wrongDomain(k *Kind, payloadType []byte) error {
	got := fmt.Sprintf("unregistered payload type %q", payloadType)
	if other, ok := KindByPayloadType(payloadType); ok {
		got = fmt.Sprintf("a %s record", other.Name)
	}
	return fmt.Errorf("attest.Open %s: %w: got %s", k.Name, ErrWrongDomain, got)
}

// decodePayload runs Open's steps 5 and 6 on a payload whose signature
// checked out: the version, then the strict decode, then the canonical
// check. It decodes strictly first and reads the version from the result
// when that works (versionOf says why that is the number payloadVersion
// would read); only a payload the strict decoder refuses is probed for its
// version, so that an unknown version is still told apart from a
// malformed payload. The errors are those of the sequence in Open's
// comment.
func decodePayload[T any](k *Kind, payload []byte) (*T, error) {
	out := new(T)
	strictErr := strictDec.Unmarshal(payload, out)
	v, known := uint(0), false
	if strictErr == nil {
		v, known = versionOf(out)
	}
	if !known {
		var err error
		if v, err = payloadVersion(payload); err != nil {
			return nil, fmt.Errorf("attest.Open %s: %w: payload: %w", k.Name, ErrMalformed, err)
		}
	}
	if !k.supports(v) {
		if v != 0 {
			return nil, fmt.Errorf("attest.Open %s: %w: %w: v=%d, supported %v", k.Name, ErrUnknownVersion, ErrOtherVersion, v, k.Versions)
		}
		return nil, fmt.Errorf("attest.Open %s: %w: v=%d, supported %v", k.Name, ErrUnknownVersion, v, k.Versions)
	}
	if strictErr != nil {
		return nil, fmt.Errorf("attest.Open %s: %w: payload: %w", k.Name, ErrMalformed, unknownField(strictErr))
	}
	// Canonical bytes only: otherwise one signer could publish many byte
	// strings (hence record IDs) for one value, and equal values would not
	// compare equal on the wire.
	if !isCanonical(out, payload) {
		return nil, fmt.Errorf("attest.Open %s: %w: payload is not canonical CBOR", k.Name, ErrMalformed)
	}
	return out, nil
}

// RecordID names a record by the CIDv1 (raw codec, sha2-256) of its
// envelope bytes. Open only accepts canonical envelopes, so an accepted
// record has exactly one ID.
func RecordID(raw []byte) cid.Cid {
	sum, err := mh.Sum(raw, mh.SHA2_256, -1)
	if err != nil {
		// sha2-256 with the default length cannot fail.
		panic(fmt.Sprintf("attest.RecordID: %v", err))
	}
	return cid.NewCidV1(cid.Raw, sum)
}
