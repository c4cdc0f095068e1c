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
// DigestBuckets buckets by a hash of the peer ID and summarizes a view of
// them (a shard, what the node vouches for) per bucket as a count and the
// XOR of the entries' hashes, so two nodes compare summaries and fetch
// only the buckets that differ. It is safe for concurrent use. Digests it
// returns are shared: treat them as read-only.
type DigestBook struct {
	mu      sync.RWMutex
	max     int
	byPeer  map[string]*bookEntry
	byShard map[Shard]map[string]*bookEntry
	exp     bookHeap
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
}

// Remove drops the digest held for peerID, if any, and reports whether
// there was one.
func (b *DigestBook) Remove(peerID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byPeer[peerID]
	if ok {
		b.remove(e)
	}
	return ok
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

// BucketSum is one sync bucket's summary: how many digests and the first
// 8 bytes of the XOR of their envelopes' SHA-256.
type BucketSum struct {
	Count uint32
	Hash  uint64
}

// BookSummary summarizes a book for sync, bucket by bucket.
type BookSummary [DigestBuckets]BucketSum

// SyncView is the part of a book a node passes on to a syncing peer:
// digests on Shard ("" for all) not expired at Now that Keep accepts (nil
// keeps all; it runs under the book's lock and must not call the book).
type SyncView struct {
	Shard Shard
	Now   time.Time
	Keep  func(*Digest) bool
}

// entries are the view's entries; callers hold b.mu.
func (v SyncView) entries(b *DigestBook, from map[string]*bookEntry) []*bookEntry {
	nowMs := v.Now.UnixMilli()
	var out []*bookEntry
	for _, e := range from {
		if e.d.ExpiresAtMs > nowMs && (v.Shard == "" || slices.Contains(e.shards, v.Shard)) && (v.Keep == nil || v.Keep(e.d)) {
			out = append(out, e)
		}
	}
	return out
}

// Summary summarizes the view bucket by bucket.
func (b *DigestBook) Summary(v SyncView) BookSummary {
	b.mu.RLock()
	from := b.byPeer
	if v.Shard != "" {
		from = b.byShard[v.Shard]
	}
	es := v.entries(b, from)
	b.mu.RUnlock()
	var xors [DigestBuckets][sha256.Size]byte
	var s BookSummary
	for _, e := range es {
		s[e.bucket].Count++
		xorInto(&xors[e.bucket], &e.hash)
	}
	for i := range s {
		s[i].Hash = binary.BigEndian.Uint64(xors[i][:8])
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

// BucketSet is a set of sync buckets, one bit each.
type BucketSet [DigestBuckets / 8]byte

// Add puts bucket b in the set.
func (s *BucketSet) Add(b int) { s[b/8] |= 1 << (b % 8) }

// Has reports whether bucket b is in the set.
func (s *BucketSet) Has(b int) bool { return b >= 0 && b < DigestBuckets && s[b/8]&(1<<(b%8)) != 0 }

// SyncBefore reports whether peer a comes before peer b in sync order: by
// bucket (DigestBucket), then by peer ID. Pages list digests in this
// order, and a page's cursor is its last peer.
func SyncBefore(a, b string) bool {
	ba, bb := DigestBucket(a), DigestBucket(b)
	return ba < bb || ba == bb && a < b
}

// Page returns up to limit sealed digests of the view in the buckets of
// set, in sync order, that come after the cursor after ("" for the first
// page), and the cursor of the next page ("" when this was the last).
func (b *DigestBook) Page(v SyncView, set BucketSet, after string, limit int) (raws [][]byte, next string) {
	if limit <= 0 {
		return nil, ""
	}
	first := 0
	if after != "" {
		first = DigestBucket(after)
	}
	var es []*bookEntry
	b.mu.RLock()
	for bk := first; bk < DigestBuckets && len(es) <= limit; bk++ {
		if !set.Has(bk) {
			continue
		}
		in := v.entries(b, b.buckets[bk])
		if bk == first && after != "" {
			in = slices.DeleteFunc(in, func(e *bookEntry) bool { return e.d.Peer <= after })
		}
		sort.Slice(in, func(i, j int) bool { return in[i].d.Peer < in[j].d.Peer })
		es = append(es, in...)
	}
	b.mu.RUnlock()
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
