package attest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrChain: an append would break the chain's rules (time going back, a
// telemetry window naming a fingerprint other than the current one, a
// head that belongs to another key).
var ErrChain = errors.New("chain rule broken")

// Head is the state a provider persists after every append to continue its
// chain: the last entry's seq, record ID and time, and the record ID of the
// fingerprint in force. It is stored locally (MarshalHead), never signed:
// the entries themselves are the evidence.
type Head struct {
	V        uint   `cbor:"v"`
	Provider string `cbor:"provider"`
	Seq      uint64 `cbor:"seq"`
	ID       string `cbor:"id"` // record ID of entry Seq
	AtMs     int64  `cbor:"at_ms"`
	// Fingerprint is the record ID of the latest fingerprint entry; empty
	// until the first one.
	Fingerprint string `cbor:"fingerprint,omitempty"`
}

// Validate checks the head's structure.
func (h *Head) Validate() error {
	var p Problems
	checkVersion(&p, h.V)
	CheckPeerID(&p, "provider", h.Provider)
	CheckRecordID(&p, "id", h.ID)
	checkPositiveMs(&p, "at_ms", h.AtMs)
	if h.Fingerprint != "" {
		CheckRecordID(&p, "fingerprint", h.Fingerprint)
	}
	return p.Err(ErrInvalid, "chain-head")
}

// MarshalHead encodes h as canonical CBOR.
func MarshalHead(h *Head) ([]byte, error) {
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("attest.MarshalHead: %w", err)
	}
	b, err := Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("attest.MarshalHead: %w", err)
	}
	return b, nil
}

// UnmarshalHead decodes a head written by MarshalHead (at most MaxHeadSize
// bytes, strict, canonical, valid).
func UnmarshalHead(b []byte) (*Head, error) {
	if len(b) > MaxHeadSize {
		return nil, fmt.Errorf("attest.UnmarshalHead: %w: %d bytes > limit %d", ErrTooLarge, len(b), MaxHeadSize)
	}
	h := new(Head)
	if err := Unmarshal(b, h); err != nil {
		return nil, fmt.Errorf("attest.UnmarshalHead: %w", err)
	}
	if again, err := Marshal(h); err != nil || string(again) != string(b) {
		return nil, fmt.Errorf("attest.UnmarshalHead: %w: not canonical CBOR", ErrMalformed)
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("attest.UnmarshalHead: %w", err)
	}
	return h, nil
}

// Chain appends signed entries to one provider's hash chain. It keeps the
// head in memory; the caller persists Head() after each Append (and the
// entry bytes), so a restart continues the chain instead of forking it.
// Chain is safe for concurrent use; appends are serialised.
type Chain struct {
	mu       sync.Mutex
	key      crypto.PrivKey
	provider string
	head     *Head // nil before the first entry
}

// NewChain continues the chain whose last entry head describes, or starts
// a new one when head is nil. The head must belong to key's peer.
func NewChain(key crypto.PrivKey, head *Head) (*Chain, error) {
	if key == nil {
		return nil, errors.New("attest.NewChain: nil key")
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("attest.NewChain: %w", err)
	}
	c := &Chain{key: key, provider: id.String()}
	if head != nil {
		if err := head.Validate(); err != nil {
			return nil, fmt.Errorf("attest.NewChain: %w", err)
		}
		if head.Provider != c.provider {
			return nil, fmt.Errorf("attest.NewChain: %w: head is %s's chain, key is %s", ErrChain, head.Provider, c.provider)
		}
		h := *head
		c.head = &h
	}
	return c, nil
}

// Provider returns the peer ID the chain's entries name.
func (c *Chain) Provider() string { return c.provider }

// Head returns the current head, or nil before the first entry.
func (c *Chain) Head() *Head {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.head == nil {
		return nil
	}
	h := *c.head
	return &h
}

// Append seals the next entry with body at atMs, linked to the previous
// one, and advances the head. A telemetry body with an empty Fingerprint
// gets the current one; one naming another fingerprint is refused, as is a
// telemetry window before any fingerprint, a time before the head's, and
// a body that does not validate. body is not modified.
func (c *Chain) Append(atMs int64, body Body) ([]byte, *Entry, error) {
	if body == nil {
		return nil, nil, errors.New("attest.Chain.Append: nil body")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &Entry{V: RecordsVersion, Provider: c.provider, AtMs: atMs}
	var fp string
	if h := c.head; h != nil {
		if atMs < h.AtMs {
			return nil, nil, fmt.Errorf("attest.Chain.Append: %w: at_ms %d is before the head's %d", ErrChain, atMs, h.AtMs)
		}
		e.Seq, e.Prev, fp = h.Seq+1, h.ID, h.Fingerprint
	}
	if t, ok := body.(*Telemetry); ok {
		switch {
		case fp == "":
			return nil, nil, fmt.Errorf("attest.Chain.Append: %w: telemetry before the first fingerprint entry", ErrChain)
		case t.Fingerprint == "":
			tc := *t
			tc.Fingerprint = fp
			body = &tc
		case t.Fingerprint != fp:
			return nil, nil, fmt.Errorf("attest.Chain.Append: %w: telemetry names fingerprint %s, current is %s", ErrChain, t.Fingerprint, fp)
		}
	}
	e.setBody(body)
	if j, ok := body.(*JobEvent); ok && (j.Artifact != "" || j.Run != nil) {
		e.V = RunEntryVersion
	}
	if err := e.Validate(); err != nil {
		return nil, nil, fmt.Errorf("attest.Chain.Append: %w", err)
	}
	raw, err := Seal(e, c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("attest.Chain.Append: %w", err)
	}
	id := RecordID(raw).String()
	if e.Kind == KindFingerprint {
		fp = id
	}
	c.head = &Head{V: RecordsVersion, Provider: c.provider, Seq: e.Seq, ID: id, AtMs: atMs, Fingerprint: fp}
	return raw, e, nil
}
