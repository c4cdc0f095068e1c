package auction

import (
	"testing"
	"time"
)

// Open gives OpenDigest's result and refuses what it refuses, whether or
// not the bytes were opened before.
func TestDigestBookOpenIsOpenDigest(t *testing.T) {
	raw := bookDigest(t, 1, 2, "a10-24gb", time.Hour)
	b := NewDigestBook(0)
	want, wantSigner, err := OpenDigest(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d, signer, err := b.Open(raw)
		if err != nil || signer != wantSigner || d.Peer != want.Peer || d.Seq != want.Seq {
			t.Fatalf("open %d: %v %s %+v, want %s %+v", i, err, signer, d, wantSigner, want)
		}
	}
	bad := append([]byte(nil), raw...)
	bad[len(bad)-1] ^= 1
	for i := range 2 {
		if _, _, err := b.Open(bad); err == nil {
			t.Fatalf("open %d of a corrupted digest: no error", i)
		}
	}
	// More distinct digests than the cache holds: the oldest are
	// forgotten, never confused.
	for i := range openedCacheSize + 10 {
		x := append([]byte(nil), raw...)
		x[len(x)-1] ^= byte(i)
		_, _, _ = b.Open(x)
	}
	if len(b.opened.m) > openedCacheSize {
		t.Fatalf("cache holds %d, bound %d", len(b.opened.m), openedCacheSize)
	}
	if d, _, err := b.Open(raw); err != nil || d.Peer != want.Peer {
		t.Fatalf("reopen after eviction: %v", err)
	}
}
