package auction

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fixtureLotsDigest is the fixture digest as version 2, its h100 shard in
// 32 lots.
func fixtureLotsDigest(t testing.TB) *Digest {
	t.Helper()
	d := fixtureDigest(t, 2)
	d.V, d.Lots = DigestVersion, map[Shard]uint32{GPUShard("h100"): 32}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

// A version 2 digest names the lots of its shards; this release reads it
// (sealed, opened, the same value back) and checks what it names.
func TestDigestLots(t *testing.T) {
	d := fixtureLotsDigest(t)
	key, _ := testKey(t, 2)
	raw, err := SealDigest(d, key)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := OpenDigest(raw)
	if err != nil || back.LotsOn(GPUShard("h100")) != 32 || back.LotsOn(ShardCPU) != 1 {
		t.Fatalf("opened %+v, %v", back, err)
	}
	for _, tc := range []struct {
		name, field string
		mut         func(d *Digest)
	}{
		{"lots in version 1", "lots", func(d *Digest) { d.V = DigestVersionNoLots }},
		{"a shard not the digest's", "lots", func(d *Digest) { d.Lots[GPUShard("t4")] = 2 }},
		{"one lot written", "lots[gpu/h100]", func(d *Digest) { d.Lots[GPUShard("h100")] = 1 }},
		{"not a power of two", "lots[gpu/h100]", func(d *Digest) { d.Lots[GPUShard("h100")] = 24 }},
		{"too many", "lots[gpu/h100]", func(d *Digest) { d.Lots[GPUShard("h100")] = 2 * MaxLots }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fixtureLotsDigest(t)
			tc.mut(d)
			err := d.Validate()
			if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), tc.field+": ") {
				t.Errorf("err = %v, want a problem at %s", err, tc.field)
			}
		})
	}
	// NewDigest writes version 2 when it names lots, of its own shards
	// only and only counts of two or more, and version 1 otherwise.
	c := fixtureCapacity(t, 2)
	in := DigestInput{Capacity: c, Seq: 3, Now: fixedNow, TTL: 10 * time.Minute,
		Lots: map[Shard]int{GPUShard("h100"): 8, GPUShard("t4"): 4, ShardCPU: 1}}
	nd, err := NewDigest(in)
	if err != nil || nd.V != DigestVersion || len(nd.Lots) != 1 || nd.LotsOn(GPUShard("h100")) != 8 {
		t.Errorf("NewDigest with lots: v%d, lots %v, %v; want version %d, h100 in 8 lots only", nd.V, nd.Lots, err, DigestVersion)
	}
	in.Lots = map[Shard]int{GPUShard("h100"): 6}
	if nd, err := NewDigest(in); err != nil || nd.Lots != nil || nd.V != DigestVersionNoLots {
		t.Errorf("NewDigest with a count that is no power of two: v%d, lots %v, %v; want version 1, none", nd.V, nd.Lots, err)
	}
	// A version 2 digest without lots is every shard in one lot.
	plain := fixtureDigest(t, 2)
	plain.V = DigestVersion
	if err := plain.Validate(); err != nil || plain.LotsOn(GPUShard("h100")) != 1 {
		t.Errorf("version 2 without lots: %v", err)
	}
}

// A digest belongs on its shard's own topics and on its lot's topic only.
func TestDigestOnLotTopic(t *testing.T) {
	d := fixtureLotsDigest(t)
	h100 := GPUShard("h100")
	lot := Lot(d.Peer, 32)
	for _, tc := range []struct {
		name string
		st   ShardTopic
		want bool
	}{
		{"the shard's topic", ShardTopic{Kind: ShardTopicDigest, Shard: h100}, true},
		{"its lot", ShardTopic{Kind: ShardTopicDigest, Shard: h100, Lot: lot, Lots: 32}, true},
		{"another lot", ShardTopic{Kind: ShardTopicDigest, Shard: h100, Lot: (lot + 1) % 32, Lots: 32}, false},
		{"its lot of another count", ShardTopic{Kind: ShardTopicDigest, Shard: h100, Lot: Lot(d.Peer, 64), Lots: 64}, false},
		{"another shard", ShardTopic{Kind: ShardTopicDigest, Shard: GPUShard("t4")}, false},
	} {
		if got := d.OnTopic(tc.st); got != tc.want {
			t.Errorf("%s: OnTopic = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without lots (version 1, or a shard of one lot) no lot topic holds it.
	if v1 := fixtureDigest(t, 2); v1.OnTopic(ShardTopic{Kind: ShardTopicDigest, Shard: h100, Lot: Lot(v1.Peer, 2), Lots: 2}) {
		t.Error("a digest of one lot is on a lot topic")
	}
}
