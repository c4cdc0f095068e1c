package attest

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/record"
)

// Reseal decodes a sealed record's payload into a generic map, lets edit
// change it, and seals the result again with key under the same kind. It
// writes records as a later release of the protocol could (a newer "v",
// fields this release does not know): what compatibility tests and
// conformance tools need to send, since this release's own types cannot
// express them.
func Reseal(raw []byte, key crypto.PrivKey, edit func(payload map[string]any)) ([]byte, error) {
	env, err := record.UnmarshalEnvelope(raw)
	if err != nil {
		return nil, fmt.Errorf("reseal: %w", err)
	}
	kind, ok := KindByPayloadType(env.PayloadType)
	if !ok {
		return nil, fmt.Errorf("reseal: no kind for payload type %q", env.PayloadType)
	}
	var payload map[string]any
	if err := cbor.Unmarshal(env.RawPayload, &payload); err != nil {
		return nil, fmt.Errorf("reseal: %w", err)
	}
	edit(payload)
	b, err := Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("reseal: %w", err)
	}
	out, err := record.Seal(&rawPayload{kind: kind, payload: b}, key)
	if err != nil {
		return nil, fmt.Errorf("reseal: %w", err)
	}
	return out.Marshal()
}

// rawPayload is an already encoded payload under a kind.
type rawPayload struct {
	kind    *Kind
	payload []byte
}

func (r *rawPayload) Domain() string                 { return r.kind.Domain }
func (r *rawPayload) Codec() []byte                  { return r.kind.PayloadType }
func (r *rawPayload) MarshalRecord() ([]byte, error) { return r.payload, nil }
func (r *rawPayload) UnmarshalRecord([]byte) error   { return nil }
