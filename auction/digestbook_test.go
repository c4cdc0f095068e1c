package auction

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// bookKey is a deterministic key for provider i.
func bookKey(t testing.TB, i int) (crypto.PrivKey, string) {
	t.Helper()
	seed := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(append(seed[:], seed[:]...)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return sk, id.String()
}

// bookDigest seals provider i's digest: seq, model, lifetime from fixedNow.
func bookDigest(t testing.TB, i int, seq uint64, model string, ttl time.Duration) []byte {
	t.Helper()
	key, id := bookKey(t, i)
	d := selDigest(id, 2, 1_000_000+uint64(i))
	d.V, d.Seq, d.IssuedAtMs, d.ExpiresAtMs, d.Reachability = DigestVersionNoLots, seq, fixedNow.UnixMilli(), fixedNow.Add(ttl).UnixMilli(), ReachPublic
	d.Models[0].Model = model
	raw, err := SealDigest(d, key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustAdd(t testing.TB, b *DigestBook, raw []byte, now time.Time) bool {
	t.Helper()
	ok, err := b.Add(raw, now)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestDigestBookAdd(t *testing.T) {
	b := NewDigestBook(0)
	_, id := bookKey(t, 1)
	if !mustAdd(t, b, bookDigest(t, 1, 2, "a10-24gb", time.Hour), fixedNow) {
		t.Fatal("first digest not added")
	}
	if mustAdd(t, b, bookDigest(t, 1, 1, "t4-16gb", time.Hour), fixedNow) {
		t.Error("older digest replaced a newer one")
	}
	if mustAdd(t, b, bookDigest(t, 1, 2, "a10-24gb", time.Hour), fixedNow) {
		t.Error("the same digest counted as a change")
	}
	if !mustAdd(t, b, bookDigest(t, 1, 3, "t4-16gb", time.Hour), fixedNow) {
		t.Error("newer digest not added")
	}
	if d, _, ok := b.Get(id); !ok || d.Seq != 3 || b.Len() != 1 {
		t.Errorf("get: %+v %v, len %d", d, ok, b.Len())
	}
	if got := b.Shards(); !slices.Equal(got, []ShardCount{{GPUShard("t4"), 1}}) {
		t.Errorf("shards after the model changed: %v", got)
	}
	if _, err := b.Add(bookDigest(t, 2, 1, "a10-24gb", time.Minute), fixedNow.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Errorf("expired: %v", err)
	}
	if _, err := b.Add(bookDigest(t, 2, 1, "a10-24gb", time.Hour), fixedNow.Add(-MaxClockSkew-time.Second)); !errors.Is(err, ErrNotYetValid) {
		t.Errorf("future: %v", err)
	}
	if _, err := b.Add([]byte("junk"), fixedNow); err == nil {
		t.Error("junk accepted")
	}
	if n := b.Prune(fixedNow.Add(2 * time.Hour)); n != 1 || b.Len() != 0 || len(b.Shards()) != 0 {
		t.Errorf("prune dropped %d, %d left, shards %v", n, b.Len(), b.Shards())
	}
}

func TestDigestBookBounded(t *testing.T) {
	b := NewDigestBook(3)
	for i := range 3 {
		mustAdd(t, b, bookDigest(t, i, 1, "a10-24gb", time.Duration(10+i)*time.Minute), fixedNow)
	}
	// A newcomer that expires sooner than everyone held is refused.
	if _, err := b.Add(bookDigest(t, 9, 1, "a10-24gb", 5*time.Minute), fixedNow); !errors.Is(err, ErrBookFull) {
		t.Errorf("short-lived newcomer: %v", err)
	}
	// One that outlives the soonest evicts it.
	mustAdd(t, b, bookDigest(t, 10, 1, "a10-24gb", time.Hour), fixedNow)
	_, first := bookKey(t, 0)
	if _, _, ok := b.Get(first); ok || b.Len() != 3 {
		t.Errorf("soonest-expiring digest kept; len %d", b.Len())
	}
	// Updating a held peer never needs room.
	mustAdd(t, b, bookDigest(t, 1, 2, "a10-24gb", 5*time.Minute), fixedNow)
	// Expired digests make room first.
	mustAdd(t, b, bookDigest(t, 11, 1, "a10-24gb", 30*time.Minute), fixedNow.Add(11*time.Minute))
	if b.Len() != 3 {
		t.Errorf("len %d", b.Len())
	}
}

func TestDigestBookViews(t *testing.T) {
	b := NewDigestBook(0)
	for i := range 6 {
		model := "a10-24gb"
		if i%2 == 1 {
			model = "t4-16gb"
		}
		mustAdd(t, b, bookDigest(t, i, 1, model, time.Duration(i+1)*time.Minute), fixedNow)
	}
	if got := len(b.Digests(GPUShard("t4"), fixedNow)); got != 3 {
		t.Errorf("t4 shard lists %d", got)
	}
	if got := len(b.Digests("", fixedNow.Add(90*time.Second))); got != 5 {
		t.Errorf("all, one expired: %d", got)
	}
	caps := b.Capacities(fixedNow)
	if len(caps) != 6 || !slices.IsSortedFunc(caps, func(x, y *Capacity) int { return cmpString(x.Peer, y.Peer) }) {
		t.Errorf("capacities: %d", len(caps))
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Two books that hold different digests find the differing buckets from
// their summaries, and paging those buckets over makes them equal.
func TestDigestBookSync(t *testing.T) {
	a, b := NewDigestBook(0), NewDigestBook(0)
	for i := range 300 {
		raw := bookDigest(t, i, 1, "a10-24gb", time.Hour)
		mustAdd(t, a, raw, fixedNow)
		if i%50 != 0 {
			mustAdd(t, b, raw, fixedNow)
		}
	}
	mustAdd(t, a, bookDigest(t, 7, 2, "a10-24gb", time.Hour), fixedNow) // a newer digest
	all := SyncView{Now: fixedNow}
	sa, sb := a.Summary(all), b.Summary(all)
	diff := sa.Diff(&sb)
	want := map[int]bool{}
	for _, i := range []int{0, 50, 100, 150, 200, 250, 7} {
		_, id := bookKey(t, i)
		want[DigestBucket(id)] = true
	}
	if len(diff) != len(want) {
		t.Fatalf("diff %v, want buckets %v", diff, want)
	}
	var set BucketSet
	for _, bucket := range diff {
		if !want[bucket] {
			t.Errorf("bucket %d differs but holds no change", bucket)
		}
		set.Add(bucket)
	}
	after, last := "", ""
	for {
		raws, next := a.Page(all, set, after, 3)
		for _, raw := range raws {
			d, _, _ := OpenDigest(raw)
			if !set.Has(DigestBucket(d.Peer)) || last != "" && !SyncBefore(last, d.Peer) {
				t.Fatalf("page out of the set or out of order at %s", d.Peer)
			}
			last = d.Peer
			if _, err := b.Add(raw, fixedNow); err != nil {
				t.Fatal(err)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if sa, sb = a.Summary(all), b.Summary(all); len(sa.Diff(&sb)) != 0 || a.Len() != b.Len() {
		t.Errorf("after sync still differ in %v", sa.Diff(&sb))
	}
	if raws, next := a.Page(all, BucketSet{}, "", 10); raws != nil || next != "" {
		t.Error("an empty set paged")
	}
}

func TestDigestBookConcurrent(t *testing.T) {
	b := NewDigestBook(50)
	raws := make([][]byte, 80)
	for i := range raws {
		raws[i] = bookDigest(t, i, 1, "a10-24gb", time.Duration(10+i)*time.Minute)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(raws); i += 4 {
				if _, err := b.Add(raws[i], fixedNow); err != nil && !errors.Is(err, ErrBookFull) {
					t.Error(err)
				}
				_ = b.Digests(GPUShard("a10"), fixedNow)
				_ = b.Summary(SyncView{Now: fixedNow})
				var set BucketSet
				set.Add(i % DigestBuckets)
				_, _ = b.Page(SyncView{Now: fixedNow}, set, "", 5)
			}
		}()
	}
	wg.Wait()
	if b.Len() != 50 {
		t.Errorf("len %d, want 50", b.Len())
	}
	sum := 0
	for _, s := range b.Summary(SyncView{Now: fixedNow}) {
		sum += int(s.Count)
	}
	if sum != 50 {
		t.Errorf("bucket counts sum to %d", sum)
	}
	// The 50 longest-lived survive, whatever the interleaving.
	for i := 30; i < 80; i++ {
		if _, id := bookKey(t, i); !slices.ContainsFunc(b.Digests("", fixedNow), func(d *Digest) bool { return d.Peer == id }) {
			t.Errorf("provider %d evicted", i)
		}
	}
}

func BenchmarkDigestBookAdd(b *testing.B) {
	raws := make([][]byte, 1000)
	for i := range raws {
		raws[i] = bookDigest(b, i, 1, fmt.Sprintf("m%d-8gb", i%10), time.Hour)
	}
	book := NewDigestBook(0)
	for i := 0; b.Loop(); i++ {
		_, _ = book.Add(raws[i%len(raws)], fixedNow)
	}
}

// TestDigestBookSyncView: a view passes on only the digests of its shard
// that its filter keeps, and Remove drops a digest.
func TestDigestBookSyncView(t *testing.T) {
	b := NewDigestBook(0)
	for i := range 20 {
		model := "a10-24gb"
		if i%2 == 1 {
			model = "t4-16gb"
		}
		mustAdd(t, b, bookDigest(t, i, 1, model, time.Hour), fixedNow)
	}
	_, kept := bookKey(t, 4)
	view := SyncView{Shard: GPUShard("a10"), Now: fixedNow, Keep: func(d *Digest) bool { return d.Peer <= kept }}
	count := 0
	for bucket, s := range b.Summary(view) {
		count += int(s.Count)
		var set BucketSet
		set.Add(bucket)
		raws, _ := b.Page(view, set, "", 100)
		if len(raws) != int(s.Count) {
			t.Fatalf("bucket %d: %d digests paged, summary says %d", bucket, len(raws), s.Count)
		}
		for _, raw := range raws {
			d, _, err := OpenDigest(raw)
			if err != nil || !d.OnShard(GPUShard("a10")) || d.Peer > kept {
				t.Fatalf("view paged a digest it should not: %+v %v", d, err)
			}
		}
	}
	want := 0
	for _, d := range b.Digests(GPUShard("a10"), fixedNow) {
		if d.Peer <= kept {
			want++
		}
	}
	if count != want || want == 0 {
		t.Fatalf("view holds %d, want %d", count, want)
	}
	if !b.Remove(kept) || b.Remove(kept) || b.Len() != 19 {
		t.Fatalf("remove: len %d", b.Len())
	}
}
