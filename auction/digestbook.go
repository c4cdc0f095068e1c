package auction

import (
	"bytes"
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// MaxBookDigests is the most providers a DigestBook holds, and
// DigestBuckets the number of sync buckets it summarizes them in.
const (
	MaxBookDigests = 100_000
	DigestBuckets  = 256
)

// ErrBookFull: the book holds its maximum and the new digest expires no
// later than every digest it would evict.
var ErrBookFull = errors.New("digest book full")

// DigestBook is a node's market view: the newest valid digest of each
// provider, at most a fixed number, each kept with its sealed bytes so it
// can be passed on to a syncing peer. It sorts providers into
// DigestBuckets buckets by a hash of the peer ID and keeps, per bucket, a
// count and the XOR of the entries' hashes, so two nodes compare
// summaries and fetch only the buckets that differ. It is safe for
// concurrent use. Digests it returns are shared: treat them as read-only.
type DigestBook struct {
	mu      sync.RWMutex
	max     int
	byPeer  map[string]*bookEntry
	byShard map[Shard]map[string]*bookEntry
	exp     bookHeap
	sums    [DigestBuckets]bucketAcc
	buckets [DigestBuckets]map[string]*bookEntry
	opened  openedDigests // digestbook_open.go
}

type bookEntry struct {
	d      *Digest
	raw    []byte
	hash   [sha256.Size]byte
	bucket int
	shards []Shard
	idx    int // position in exp
}

type bucketAcc struct {
	n   uint32
	xor [sha256.Size]byte
}

// NewDigestBook returns an empty book holding at most max digests
// (max <= 0 or above MaxBookDigests: MaxBookDigests).
func NewDigestBook(max int) *DigestBook {
	if max <= 0 || max > MaxBookDigests {
		max = MaxBookDigests
	}
	return &DigestBook{max: max, byPeer: map[string]*bookEntry{}, byShard: map[Shard]map[string]*bookEntry{}}
}

// DigestBucket is the sync bucket of a provider: the first byte of the
// SHA-256 of its peer ID text.
func DigestBucket(peerID string) int {
	h := sha256.Sum256([]byte(peerID))
	return int(h[0])
}

// Add opens a sealed digest and keeps it if it is valid at now and newer
// than the one held for its peer. It reports whether the book changed; an
// older or equal digest is not an error (gossip delivers those). When the
// book is full, expired digests are pruned first, then the digest that
// expires soonest is evicted, if it expires before the new one: a flood
// of fresh keys cannot push out providers that refresh more often.
func (b *DigestBook) Add(raw []byte, now time.Time) (bool, error) {
	d, _, err := b.Open(raw)
	if err != nil {
		return false, fmt.Errorf("auction.DigestBook.Add: %w", err)
	}
	if err := d.CheckTime(now); err != nil {
		return false, fmt.Errorf("auction.DigestBook.Add: %w", err)
	}
	e := &bookEntry{d: d, raw: bytes.Clone(raw), hash: sha256.Sum256(raw), bucket: DigestBucket(d.Peer), shards: d.Shards()}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.byPeer[d.Peer]; ok {
		if !d.Supersedes(old.d) {
			return false, nil
		}
		b.remove(old)
	} else if len(b.byPeer) >= b.max {
		b.pruneLocked(now.UnixMilli())
		if len(b.byPeer) >= b.max {
			if b.exp[0].d.ExpiresAtMs >= d.ExpiresAtMs {
				return false, fmt.Errorf("auction.DigestBook.Add: %w (%d digests)", ErrBookFull, len(b.byPeer))
			}
			b.remove(b.exp[0])
		}
	}
	b.insert(e)
	return true, nil
}

func (b *DigestBook) insert(e *bookEntry) {
	b.byPeer[e.d.Peer] = e
	heap.Push(&b.exp, e)
	for _, s := range e.shards {
		m := b.byShard[s]
		if m == nil {
			m = map[string]*bookEntry{}
			b.byShard[s] = m
		}
		m[e.d.Peer] = e
	}
	if b.buckets[e.bucket] == nil {
		b.buckets[e.bucket] = map[string]*bookEntry{}
	}
	b.buckets[e.bucket][e.d.Peer] = e
	acc := &b.sums[e.bucket]
	acc.n++
	xorInto(&acc.xor, &e.hash)
}

func (b *DigestBook) remove(e *bookEntry) {
	delete(b.byPeer, e.d.Peer)
	heap.Remove(&b.exp, e.idx)
	for _, s := range e.shards {
		delete(b.byShard[s], e.d.Peer)
		if len(b.byShard[s]) == 0 {
			delete(b.byShard, s)
		}
	}
	delete(b.buckets[e.bucket], e.d.Peer)
	acc := &b.sums[e.bucket]
	acc.n--
	xorInto(&acc.xor, &e.hash)
}

func xorInto(dst, src *[sha256.Size]byte) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}

// Prune drops every digest expired at now and returns how many.
func (b *DigestBook) Prune(now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pruneLocked(now.UnixMilli())
}

func (b *DigestBook) pruneLocked(nowMs int64) int {
	n := 0
	for len(b.exp) > 0 && b.exp[0].d.ExpiresAtMs <= nowMs {
		b.remove(b.exp[0])
		n++
	}
	return n
}

// Len returns the number of digests held (expired ones included until
// pruned).
func (b *DigestBook) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.byPeer)
}

// Get returns the digest held for peerID and its sealed bytes.
func (b *DigestBook) Get(peerID string) (*Digest, []byte, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	e, ok := b.byPeer[peerID]
	if !ok {
		return nil, nil, false
	}
	return e.d, e.raw, true
}

// Digests returns the digests not expired at now, sorted by peer: those
// on shard s, or every one when s is "".
func (b *DigestBook) Digests(s Shard, now time.Time) []*Digest {
	b.mu.RLock()
	defer b.mu.RUnlock()
	src := b.byPeer
	if s != "" {
		src = b.byShard[s]
	}
	nowMs := now.UnixMilli()
	out := make([]*Digest, 0, len(src))
	for _, e := range src {
		if e.d.ExpiresAtMs > nowMs {
			out = append(out, e.d)
		}
	}
	slices.SortFunc(out, func(x, y *Digest) int { return cmp.Compare(x.Peer, y.Peer) })
	return out
}

// Capacities expands every digest not expired at now into a record
// (Digest.Capacity), sorted by peer: the input of `market search`.
func (b *DigestBook) Capacities(now time.Time) []*Capacity {
	ds := b.Digests("", now)
	out := make([]*Capacity, len(ds))
	for i, d := range ds {
		out[i] = d.Capacity()
	}
	return out
}

// ShardCount is a shard and how many providers the book holds on it.
type ShardCount struct {
	Shard     Shard
	Providers int
}

// Shards lists the shards the book knows, by name.
func (b *DigestBook) Shards() []ShardCount {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]ShardCount, 0, len(b.byShard))
	for s, m := range b.byShard {
		out = append(out, ShardCount{s, len(m)})
	}
	slices.SortFunc(out, func(x, y ShardCount) int { return cmp.Compare(x.Shard, y.Shard) })
	return out
}

// ShardsFor returns the shards a renter publishes r on (RFQShards), with
// the GPU shards that hold a digest fitting r (DigestFits) as the known
// shards, cheapest fitting offer first.
func (b *DigestBook) ShardsFor(r *RFQ, now time.Time) []Shard {
	best := map[Shard]uint64{}
	for _, d := range b.Digests("", now) {
		price, _, ok := DigestFits(r, d)
		if !ok {
			continue
		}
		for _, s := range d.Shards() {
			if p, seen := best[s]; s != ShardCPU && (!seen || price < p) {
				best[s] = price
			}
		}
	}
	known := make([]Shard, 0, len(best))
	for s := range best {
		known = append(known, s)
	}
	slices.SortFunc(known, func(x, y Shard) int { return cmp.Or(cmp.Compare(best[x], best[y]), cmp.Compare(x, y)) })
	return RFQShards(r, known)
}

// BucketSum is one sync bucket's summary: how many digests and the first
// 8 bytes of the XOR of their envelopes' SHA-256.
type BucketSum struct {
	Count uint32
	Hash  uint64
}

// BookSummary summarizes a book for sync, bucket by bucket.
type BookSummary [DigestBuckets]BucketSum

// Summary returns the book's current summary. Expired digests count until
// pruned, so call Prune first for a summary another node can match.
func (b *DigestBook) Summary() BookSummary {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var s BookSummary
	for i, acc := range b.sums {
		s[i] = BucketSum{Count: acc.n, Hash: binary.BigEndian.Uint64(acc.xor[:8])}
	}
	return s
}

// Diff returns the buckets in which s and o differ, ascending.
func (s *BookSummary) Diff(o *BookSummary) []int {
	var out []int
	for i := range s {
		if s[i] != o[i] {
			out = append(out, i)
		}
	}
	return out
}

// BucketPage returns, sorted by peer, up to limit sealed digests of one
// bucket whose peer ID sorts after the cursor after ("" for the first
// page), and the cursor of the next page ("" when this was the last).
func (b *DigestBook) BucketPage(bucket int, after string, limit int) (raws [][]byte, next string) {
	if bucket < 0 || bucket >= DigestBuckets || limit <= 0 {
		return nil, ""
	}
	b.mu.RLock()
	var es []*bookEntry
	for _, e := range b.buckets[bucket] {
		if e.d.Peer > after {
			es = append(es, e)
		}
	}
	b.mu.RUnlock()
	sort.Slice(es, func(i, j int) bool { return es[i].d.Peer < es[j].d.Peer })
	if len(es) > limit {
		es, next = es[:limit], es[limit-1].d.Peer
	}
	for _, e := range es {
		raws = append(raws, e.raw)
	}
	return raws, next
}

// bookHeap orders entries by expiry, soonest first (container/heap).
type bookHeap []*bookEntry

func (h bookHeap) Len() int { return len(h) }
func (h bookHeap) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(h[i].d.ExpiresAtMs, h[j].d.ExpiresAtMs), cmp.Compare(h[i].d.Peer, h[j].d.Peer)) < 0
}
func (h bookHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *bookHeap) Push(x any)   { e := x.(*bookEntry); e.idx = len(*h); *h = append(*h, e) }
func (h *bookHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
