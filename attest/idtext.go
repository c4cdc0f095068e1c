package attest

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Fast forms of the identifier checks that every record runs on its peer
// IDs and record IDs. Each answers exactly as the check it speeds up (it
// is a pure function of the text), so callers see no difference but time.

// peerTextCache remembers peer IDs whose text was found canonical, so that
// the base58 decode and re-encode run once per peer rather than once per
// mention: a chain segment names one provider and a few renters, over and
// over. It is direct-mapped and bounded (a hostile stream of fresh IDs
// only evicts), and it only ever holds the result of the full check.
var peerTextCache struct {
	seed  maphash.Seed
	slots [512]atomic.Pointer[peerText]
}

type peerText struct {
	text string
	id   peer.ID
}

func init() { peerTextCache.seed = maphash.MakeSeed() }

func peerSlot(s string) *atomic.Pointer[peerText] {
	h := maphash.String(peerTextCache.seed, s)
	return &peerTextCache.slots[h%uint64(len(peerTextCache.slots))]
}

// canonicalPeer returns the peer ID s is the canonical text of: ok is
// true iff peer.Decode(s) succeeds and the ID's String() is s.
func canonicalPeer(s string) (peer.ID, bool) {
	if s == "" {
		return "", false
	}
	slot := peerSlot(s)
	if p := slot.Load(); p != nil && p.text == s {
		return p.id, true
	}
	id, err := peer.Decode(s)
	if err != nil || id.String() != s {
		return "", false
	}
	slot.Store(&peerText{text: s, id: id})
	return id, true
}

// recordIDPrefix is the binary CID prefix of a record ID: version 1, raw
// codec (0x55), multihash sha2-256 (0x12) of 32 bytes (0x20).
var recordIDPrefix = [4]byte{0x01, 0x55, 0x12, 0x20}

const (
	recordIDBinLen  = len(recordIDPrefix) + 32
	recordIDTextLen = 1 + (recordIDBinLen*8+4)/5 // 'b' + 58 digits
	// The 58 digits carry 290 bits: the 288 of the CID and 2 that the
	// canonical (RFC 4648) encoding leaves zero.
	recordIDPadBits = (recordIDTextLen-1)*5 - recordIDBinLen*8
)

// base32Lower maps 'a'-'z' and '2'-'7' to their values and anything else to
// 0xff: multibase 'b', RFC 4648 lower case without padding.
var base32Lower = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "abcdefghijklmnopqrstuvwxyz234567" {
		t[c] = byte(i)
	}
	return t
}()

// isRecordIDFast reports true only for texts that are 'b' followed by the
// canonical base32 of a CIDv1 raw sha2-256 CID (digits from the alphabet,
// zero padding bits), which is exactly what RecordID(...).String() writes
// and what isRecordID's full check accepts. false means "not this shape":
// the full check decides.
func isRecordIDFast(s string) bool {
	if len(s) != recordIDTextLen || s[0] != 'b' {
		return false
	}
	var bin [recordIDBinLen]byte
	var acc uint64
	bits, n := 0, 0
	for i := 1; i < len(s); i++ {
		d := base32Lower[s[i]]
		if d == 0xff {
			return false
		}
		acc = acc<<5 | uint64(d)
		bits += 5
		if bits >= 8 {
			bits -= 8
			bin[n] = byte(acc >> bits)
			n++
		}
	}
	if bits != recordIDPadBits || acc&(1<<bits-1) != 0 {
		return false
	}
	return [4]byte(bin[:4]) == recordIDPrefix
}

// isCanonicalPeer reports whether checkPeer would accept s.
func isCanonicalPeer(s string) bool {
	_, ok := canonicalPeer(s)
	return ok
}

// canonicalPeerCached is canonicalPeer limited to the cache: ok false
// means "not known", not "not canonical".
func canonicalPeerCached(s string) (peer.ID, bool) {
	if p := peerSlot(s).Load(); p != nil && p.text == s {
		return p.id, true
	}
	return "", false
}
