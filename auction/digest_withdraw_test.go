package auction

import (
	"errors"
	"testing"
	"time"
)

// TestWithdrawnDigest: a provider leaving on purpose seals a last digest
// with nothing free and a short life. It supersedes the digest a book
// holds, then expires, leaving the view; only the provider's key can sign
// it; and replayed it never removes the provider once it is back.
func TestWithdrawnDigest(t *testing.T) {
	key, _ := testKey(t, 2)
	c := fixtureCapacity(t, 2)
	seal := func(seq uint64, now time.Time, withdrawn bool) []byte {
		t.Helper()
		ttl := 3 * time.Minute
		if withdrawn {
			ttl = 3 * time.Second
		}
		d, err := NewDigest(DigestInput{Capacity: c, Seq: seq, Now: now, TTL: ttl, Withdrawn: withdrawn})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := SealDigest(d, key)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	book := NewDigestBook(16)
	if ok, err := book.Add(seal(1, fixedNow, false), fixedNow); !ok || err != nil {
		t.Fatalf("live digest: %v %v", ok, err)
	}
	left := fixedNow.Add(time.Second)
	withdrawal := seal(2, left, true)
	if ok, err := book.Add(withdrawal, left); !ok || err != nil {
		t.Fatalf("withdrawal not taken: %v %v", ok, err)
	}
	ds := book.Digests("", left)
	if len(ds) != 1 || ds[0].Models[0].Free != 0 || ds[0].Models[0].Held != 0 || ds[0].Floor.Silver == 0 {
		t.Fatalf("while it lives the withdrawal offers nothing free: %+v", ds)
	}
	if got := book.Digests("", left.Add(3*time.Second)); len(got) != 0 {
		t.Fatalf("withdrawn provider still in the view after its last digest expired: %+v", got)
	}

	// Nobody else can sign it.
	d, _, err := OpenDigest(withdrawal)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := testKey(t, 9)
	if _, err := SealDigest(d, other); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("withdrawal sealed by another key: %v", err)
	}

	// Back again: its new digest supersedes the withdrawal, and a replay
	// of the withdrawal is older (while it lives) or expired (after).
	back := left.Add(time.Second)
	if ok, err := book.Add(seal(3, back, false), back); !ok || err != nil {
		t.Fatalf("the provider's return: %v %v", ok, err)
	}
	if ok, _ := book.Add(withdrawal, back); ok {
		t.Fatal("a replayed withdrawal replaced the live provider's digest")
	}
	if ok, err := book.Add(withdrawal, left.Add(3*time.Second)); ok || !errors.Is(err, ErrExpired) {
		t.Fatalf("an expired withdrawal: %v %v", ok, err)
	}
	if got := book.Digests("", back); len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("live provider's digest %+v", got)
	}
}
