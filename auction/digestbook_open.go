package auction

import (
	"crypto/sha256"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// openedCacheSize is how many recently opened digests a book remembers.
const openedCacheSize = 1024

// openedDigests remembers digests whose signature was checked, by the
// SHA-256 of their sealed bytes. One gossiped digest is opened by the
// topic validator, then by the handler that adds it, the book and the
// shard bookkeeping, and again when a sync brings the same bytes: each
// open is an ed25519 verification, about 50 us, against 1-2 us for the
// hash. At 200 providers forming a network on two cores these repeats were
// the largest single cost (16% of the CPU).
type openedDigests struct {
	mu   sync.Mutex
	m    map[[sha256.Size]byte]openedDigest
	ring [][sha256.Size]byte // insertion order, for eviction
	next int
}

type openedDigest struct {
	d      *Digest
	signer peer.ID
}

// Open is OpenDigest for a book's users: the same checks and result, with
// the signature verified once for the same bytes however often they are
// opened. The digest returned is shared: treat it as read-only.
func (b *DigestBook) Open(raw []byte) (*Digest, peer.ID, error) {
	h := sha256.Sum256(raw)
	c := &b.opened
	c.mu.Lock()
	if o, ok := c.m[h]; ok {
		c.mu.Unlock()
		return o.d, o.signer, nil
	}
	c.mu.Unlock()
	d, signer, err := OpenDigest(raw)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[sha256.Size]byte]openedDigest, openedCacheSize)
		c.ring = make([][sha256.Size]byte, openedCacheSize)
	}
	if _, ok := c.m[h]; !ok {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = h
		c.next = (c.next + 1) % openedCacheSize
		c.m[h] = openedDigest{d: d, signer: signer}
	}
	return d, signer, nil
}
