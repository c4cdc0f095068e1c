package auction

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// shardDigest is a provider of one model on its family's shard.
func shardDigest(peer, model string, floor uint64) *Digest {
	d := selDigest(peer, 2, floor)
	d.Models[0].Model = model
	return d
}

// TestChooseShards: proven shards first by price; shards only unproven
// providers back come after, known families before made-up ones, at most
// MaxUnprovenShards of them; at most MaxUnheardShards without a
// subscriber.
func TestChooseShards(t *testing.T) {
	r := selRFQ(1, 16)
	r.Resources.Models = nil
	honest := []ShardOffer{
		{shardDigest("h1", "a10-24gb", 1_500_000), true},
		{shardDigest("h2", "l40s-48gb", 1_200_000), true},
		{shardDigest("h3", "t4-16gb", 900_000), false},
	}
	var sybils []ShardOffer
	for i := range 20 {
		sybils = append(sybils, ShardOffer{shardDigest(fmt.Sprint("s", i), fmt.Sprintf("zz-fake%d-8gb", i), 1_000), false})
	}
	for _, tc := range []struct {
		name   string
		offers []ShardOffer
		heard  func(Shard) bool
		want   []Shard
	}{
		{"proven by price, then unproven", honest, nil, []Shard{"gpu/l40s", "gpu/a10", "gpu/t4"}},
		{"made-up families after known ones, two at most", slices.Concat(sybils, honest), nil,
			[]Shard{"gpu/l40s", "gpu/a10", "gpu/t4", "gpu/zz-fake0"}},
		{"only unproven", sybils, nil, []Shard{"gpu/zz-fake0", "gpu/zz-fake1"}},
		{"unheard shards cut", slices.Concat(sybils, honest), func(s Shard) bool { return s == "gpu/a10" },
			[]Shard{"gpu/l40s", "gpu/a10", "gpu/t4"}},
		{"too dear fits nowhere", []ShardOffer{{shardDigest("d", "a10-24gb", 9_000_000), true}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChooseShards(r, tc.offers, tc.heard, fixedNow); !slices.Equal(got, tc.want) {
				t.Fatalf("ChooseShards = %v, want %v", got, tc.want)
			}
		})
	}
	// A job naming a model goes to its family, and to known extensions only.
	r.Resources.Models = []string{"a10"}
	if got := ChooseShards(r, slices.Concat(sybils, honest), nil, fixedNow); !slices.Equal(got, []Shard{"gpu/a10"}) {
		t.Fatalf("a10 job: %v", got)
	}
	// A shard whose only fitting host closes before the job would end is
	// no shard for it.
	r.Resources.Models = nil
	r.Tier, r.ExpectedDurationSec = TierSilver, 7200
	closing := shardDigest("c", "h100-80gb", 1_000_000)
	closing.IssuedAtMs, closing.OpenUntilMs = fixedNow.UnixMilli(), fixedNow.Add(time.Hour).UnixMilli()
	offers := append(slices.Clone(honest), ShardOffer{closing, true})
	if got := ChooseShards(r, offers, nil, fixedNow); slices.Contains(got, "gpu/h100") {
		t.Fatalf("a 2-hour job: %v, want no h100 shard (its host closes in an hour)", got)
	}
	if got := ChooseShards(r, offers, nil, fixedNow.Add(-2*time.Hour)); !slices.Contains(got, "gpu/h100") {
		t.Fatalf("3 hours before the close: %v, want the h100 shard", got)
	}
}

// TestSelectBiddersNewcomers: providers never seen to bid do not fill the
// cheapest prefix; those among them whose own view selects them are
// reported, so the renter expects their bids too.
func TestSelectBiddersNewcomers(t *testing.T) {
	r := selRFQ(1, 2)
	proven := []*Digest{selDigest("p1", 2, 2_000_000), selDigest("p2", 2, 2_100_000), selDigest("p3", 2, 2_200_000)}
	cheap := selDigest("n-cheap", 2, 1_000_000)
	dear := selDigest("n-dear", 2, 2_900_000)
	in := BidSelectInput{RFQ: r, RFQID: "rfq-1", Shard: GPUShard("a10"), Digests: proven, Newcomers: []*Digest{dear, cheap}}
	sel := SelectBidders(in)
	if !slices.Equal(sel.Always, []string{"p1", "p2"}) {
		t.Fatalf("prefix %v, want the two cheapest proven providers", sel.Always)
	}
	if !slices.Equal(sel.Newcomers, []string{"n-cheap"}) {
		t.Fatalf("newcomers selected %v, want the one its own view puts in the prefix", sel.Newcomers)
	}
	// The newcomer's own decision agrees.
	own := in
	own.Digests, own.Newcomers = append([]*Digest{cheap}, proven...), nil
	if ok, _ := ShouldBid(own, "n-cheap"); !ok || !sel.Includes("n-cheap") {
		t.Fatal("the cheap newcomer's own rule does not select it")
	}
	// Fresh keys at a tenth of the price leave the proven prefix as it was.
	var sybils []*Digest
	for i := range 200 {
		sybils = append(sybils, selDigest(fmt.Sprint("s", i), 8, 100_000))
	}
	in.Newcomers = sybils
	if got := SelectBidders(in); !slices.Equal(got.Always, []string{"p1", "p2"}) || len(got.Newcomers) != MaxNewcomers {
		t.Fatalf("with 200 sybil newcomers: prefix %v, newcomers %d (want %d considered)", got.Always, len(got.Newcomers), MaxNewcomers)
	}
}
