package auction

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// Lots are even (a hash, whatever the peers' geography), and doubling
// their number splits each lot in two: a provider of lot i of G is in lot
// i or i + G of 2G.
func TestLotsAreEvenAndSplitInTwo(t *testing.T) {
	const peers, lots = 16_000, 8
	count := make([]int, lots)
	for i := range peers {
		p := fmt.Sprintf("12D3KooWpeer%06d", i)
		l := Lot(p, lots)
		count[l]++
		if l2 := Lot(p, 2*lots); l2%lots != l {
			t.Fatalf("%s: lot %d of %d, lot %d of %d", p, l, lots, l2, 2*lots)
		}
	}
	for l, n := range count {
		if n < peers/lots*9/10 || n > peers/lots*11/10 {
			t.Errorf("lot %d holds %d of %d peers, want %d ± 10%%: %v", l, n, peers, peers/lots, count)
		}
	}
	if Lot("anyone", 1) != 0 || Lot("anyone", 0) != 0 {
		t.Error("a shard of one lot has lot 0 only")
	}
}

// A lot topic names its lot and holds only its lot's providers; a shard
// of one lot keeps its own topic.
func TestLotTopics(t *testing.T) {
	for _, tc := range []struct {
		lots int
		ok   bool
	}{{0, false}, {1, false}, {2, true}, {3, false}, {32, true}, {MaxLots, true}, {2 * MaxLots, false}, {-2, false}} {
		if ValidLots(tc.lots) != tc.ok {
			t.Errorf("ValidLots(%d) = %v", tc.lots, !tc.ok)
		}
	}
	base := GPUShard("h100").DigestTopic()
	if got := LotTopic(base, 0, 1); got != base {
		t.Errorf("one lot: %q, want the shard's topic", got)
	}
	const p = "12D3KooWpeer000001"
	lot := Lot(p, 32)
	st, err := ParseShardTopic(LotTopic(base, lot, 32))
	if err != nil || st.Lot != lot || st.Lots != 32 || st.Shard != GPUShard("h100") || st.Kind != ShardTopicDigest {
		t.Fatalf("%+v, %v", st, err)
	}
	if !st.Holds(p) {
		t.Errorf("lot %d of 32 does not hold its provider", lot)
	}
	st.Lot = (lot + 1) % 32
	if st.Holds(p) {
		t.Errorf("lot %d of 32 holds a provider of lot %d", st.Lot, lot)
	}
	if whole := (ShardTopic{Kind: ShardTopicDigest, Shard: GPUShard("h100")}); !whole.Holds(p) {
		t.Error("the shard's own topic holds every provider")
	}
}

// TestLotsFor: a shard splits at LotSplitAt per lot and joins below
// LotJoinBelow per lot, so between the two the count stays.
func TestLotsFor(t *testing.T) {
	for _, tc := range []struct{ prev, size, want int }{
		{0, 0, 1}, {1, 999, 1}, {1, 1000, 2}, {0, 1000, 2},
		{2, 999, 2}, {2, 500, 2}, {2, 499, 1}, // hysteresis: 500..1999 stays at 2
		{2, 1999, 2}, {2, 2000, 4}, {1, 2000, 4}, // a jump splits as often as needed
		{4, 999, 2}, {4, 100, 1}, {32, 20_000, 32}, {32, 32_000, 64}, {32, 7_999, 16},
		{1, 10_000_000, MaxLots}, {MaxLots, 10_000_000, MaxLots},
		{3, 0, 1}, {-5, 1000, 2}, {1 << 20, 0, 1}, // not a count: start over, or clamp
	} {
		got := LotsFor(tc.prev, tc.size)
		if got != tc.want {
			t.Errorf("LotsFor(%d, %d) = %d, want %d", tc.prev, tc.size, got, tc.want)
		}
		if got != 1 && !ValidLots(got) {
			t.Errorf("LotsFor(%d, %d) = %d is not a valid count", tc.prev, tc.size, got)
		}
	}
}

// TestRFQTopicsOn: an RFQ goes to the shard's topic while any backed
// provider of the shard names no lots; once all do, to the two lots with
// the cheapest proven fitting offers (a lot of unproven providers, or of
// offers that do not fit, is not chosen, however cheap), lots of two
// counts side by side near a threshold.
func TestRFQTopicsOn(t *testing.T) {
	s := GPUShard("a10")
	r := selRFQ(1, 8)
	var offers []ShardOffer
	add := func(peer string, price uint64, lots int, proven bool) {
		d := selDigest(peer, 1, price)
		if lots > 1 {
			d.V, d.Lots = DigestVersion, map[Shard]uint32{s: uint32(lots)}
		}
		offers = append(offers, ShardOffer{Digest: d, Proven: proven})
	}
	// Peers named so that their lots differ; their lots are whatever the
	// hash says, read back below.
	for i := range 40 {
		add(fmt.Sprintf("p%02d", i), 1_000_000+uint64(i)*10_000, 4, true)
	}
	add("fresh", 100_000, 4, false) // the cheapest, unproven
	add("dear-fit", 9_000_000, 4, true)
	got := RFQTopicsOn(r, s, offers, time.Time{})
	want := []ShardTopic{
		{Kind: ShardTopicRFQ, Shard: s, Lot: Lot("p00", 4), Lots: 4},
	}
	// The second lot is the lot of the cheapest proven offer outside p00's.
	for i := 1; i < 40; i++ {
		if l := Lot(fmt.Sprintf("p%02d", i), 4); l != want[0].Lot {
			want = append(want, ShardTopic{Kind: ShardTopicRFQ, Shard: s, Lot: l, Lots: 4})
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("all in 4 lots: %v, want %v", got, want)
	}
	for _, st := range got {
		if st.Topic() != LotTopic(s.RFQTopic(), st.Lot, 4) {
			t.Errorf("topic %s", st.Topic())
		}
	}
	// A provider naming no lots (an earlier release, or a fresh node) is
	// the shard's own topic's lot: dear, it is not chosen; the cheapest,
	// its topic comes first.
	add("old", 5_000_000, 1, true)
	if got := RFQTopicsOn(r, s, offers, time.Time{}); !slices.Equal(got, want) {
		t.Fatalf("a dear provider outside lots: %v, want %v", got, want)
	}
	offers[len(offers)-1].Digest.Floor.Silver = 10_000
	if got := RFQTopicsOn(r, s, offers, time.Time{}); len(got) != 2 || got[0] != ShardRFQTopics([]Shard{s})[0] || got[1] != want[0] {
		t.Fatalf("the cheapest provider outside lots: %v, want the shard's topic, then %v", got, want[0])
	}
	offers = offers[:len(offers)-1]
	// Near a threshold, lots of 8 beside lots of 4: each its own auction.
	// Of 8 lots the renter follows LotsFollowed (4): a cheaper offer in a
	// lot it does not follow is outside its view.
	named := func(follows bool) string {
		for i := 0; ; i++ {
			p := fmt.Sprintf("split-%d", i)
			if FollowsLot(r.Renter, Lot(p, 8), 8, LotsFollowed) == follows {
				return p
			}
		}
	}
	split, unseen := named(true), named(false)
	add(unseen, 400_000, 8, true)
	add(split, 500_000, 8, true)
	got = RFQTopicsOn(r, s, offers, time.Time{})
	if len(got) != 2 || got[0] != (ShardTopic{Kind: ShardTopicRFQ, Shard: s, Lot: Lot(split, 8), Lots: 8}) || got[1] != want[0] {
		t.Fatalf("providers in 8 lots the cheapest, one in a lot the renter follows: %v, want its lot of 8, then %v", got, want[0])
	}
	// No proven offer fits (the price ceiling is below all): every
	// followed lot with a fitting offer, here the fresh key's, since the
	// providers of a split shard no longer follow its own topic.
	r.MaxPriceMicro = 200_000
	if got, want := RFQTopicsOn(r, s, offers, time.Time{}), []ShardTopic{{Kind: ShardTopicRFQ, Shard: s, Lot: Lot("fresh", 4), Lots: 4}}; !slices.Equal(got, want) {
		t.Fatalf("no proven fitting offer: %v, want %v", got, want)
	}
	// No offer fits at all: the shard's topic.
	r.MaxPriceMicro = 50_000
	if got := RFQTopicsOn(r, s, offers, time.Time{}); !slices.Equal(got, ShardRFQTopics([]Shard{s})) {
		t.Fatalf("no fitting offer: %v, want the shard's topic", got)
	}
}

// TestEveryoneTopicsOn: an RFQ asking every provider goes to each lot the
// renter follows that holds a backed provider, and to the shard's own
// topic as well while one of them names no lots.
func TestEveryoneTopicsOn(t *testing.T) {
	s := GPUShard("a10")
	renter := "renter"
	var offers []ShardOffer
	add := func(peer string, lots int) {
		d := selDigest(peer, 1, 1_000_000)
		if lots > 1 {
			d.V, d.Lots = DigestVersion, map[Shard]uint32{s: uint32(lots)}
		}
		offers = append(offers, ShardOffer{Digest: d})
	}
	want := map[ShardTopic]bool{}
	for i := range 64 {
		p := fmt.Sprintf("p%02d", i)
		add(p, 8)
		if l := Lot(p, 8); FollowsLot(renter, l, 8, LotsFollowed) {
			want[ShardTopic{Kind: ShardTopicRFQ, Shard: s, Lot: l, Lots: 8}] = true
		}
	}
	got := EveryoneTopicsOn(renter, s, offers)
	if len(got) != len(want) || len(got) != LotsFollowed {
		t.Fatalf("all in 8 lots: %v, want the %d the renter follows: %v", got, LotsFollowed, want)
	}
	for _, st := range got {
		if !want[st] {
			t.Fatalf("all in 8 lots: %v holds %v, which the renter does not follow", got, st)
		}
	}
	add("old", 1)
	if got := EveryoneTopicsOn(renter, s, offers); len(got) != LotsFollowed+1 || got[0] != (ShardTopic{Kind: ShardTopicRFQ, Shard: s}) {
		t.Fatalf("one provider outside lots: %v, want the shard's topic and the renter's lots", got)
	}
	if got := EveryoneTopicsOn(renter, s, nil); !slices.Equal(got, ShardRFQTopics([]Shard{s})) {
		t.Fatalf("no provider known: %v, want the shard's topic", got)
	}
}

// TestRenterFollowsLots: a renter follows LotsFollowed lots of a shard in
// more, consecutive from the one its ID hashes to, and every lot of a
// shard in fewer; renters spread evenly over the lots.
func TestRenterFollowsLots(t *testing.T) {
	for _, lots := range []int{2, 4, 8, 32} {
		perLot := make([]int, lots)
		const renters = 20000
		for i := range renters {
			renter := fmt.Sprintf("renter-%d", i)
			got := FollowedLots(renter, lots, LotsFollowed)
			want := min(lots, LotsFollowed)
			if len(got) != want {
				t.Fatalf("%s follows %d of %d lots, want %d", renter, len(got), lots, want)
			}
			for l := range lots {
				if FollowsLot(renter, l, lots, LotsFollowed) != slices.Contains(got, l) {
					t.Fatalf("%s, lot %d of %d: FollowsLot and FollowedLots disagree (%v)", renter, l, lots, got)
				}
			}
			if lots > LotsFollowed && got[0] != Lot(renter, lots) {
				t.Fatalf("%s follows %v of %d lots, not from its own lot %d", renter, got, lots, Lot(renter, lots))
			}
			for _, l := range got {
				perLot[l]++
			}
		}
		want := float64(renters*min(lots, LotsFollowed)) / float64(lots)
		for l, n := range perLot {
			if math.Abs(float64(n)-want) > 0.1*want {
				t.Errorf("%d lots: lot %d followed by %d renters, want about %.0f", lots, l, n, want)
			}
		}
	}
	if got := FollowedLots("r", 1, LotsFollowed); !slices.Equal(got, []int{0}) {
		t.Errorf("a shard of one lot: %v", got)
	}
}

// TestLotCountsToFollow: the two counts most providers name, the smaller
// first on a tie; a third count, and counts no shard splits into, are left.
func TestLotCountsToFollow(t *testing.T) {
	for _, c := range []struct {
		counts map[int]int
		want   []int
	}{
		{nil, nil},
		{map[int]int{4: 600}, []int{4}},
		{map[int]int{4: 300, 8: 900, 1024: 3}, []int{8, 4}},
		{map[int]int{4: 5, 8: 5}, []int{4, 8}},
		{map[int]int{3: 900, 1: 900, 2048: 900, 16: 1, 0: 7}, []int{16}},
	} {
		if got := LotCountsToFollow(c.counts); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.counts, got, c.want)
		}
	}
}

// TestProviderShardTopics: a provider of a shard in one lot follows the
// shard's topics and the digest topics of its two lots of 2; in G lots,
// its lot's three topics, the digest topic of the lot of G/2 its lot is
// half of (the shard's own at G = 2), and those of its lot's two halves
// of 2G (none past MaxLots).
func TestProviderShardTopics(t *testing.T) {
	s := GPUShard("h100")
	self := "12D3KooWself"
	one := ProviderShardTopics(self, s, 1)
	if want := []string{s.RFQTopic(), s.DigestTopic(), s.AttestTopic(), LotTopic(s.DigestTopic(), 0, 2), LotTopic(s.DigestTopic(), 1, 2)}; !slices.Equal(one, want) {
		t.Fatalf("one lot: %v, want %v", one, want)
	}
	for _, g := range []int{2, 8, MaxLots} {
		lot := Lot(self, g)
		want := []string{LotTopic(s.RFQTopic(), lot, g), LotTopic(s.DigestTopic(), lot, g), LotTopic(s.AttestTopic(), lot, g),
			LotTopic(s.DigestTopic(), Lot(self, g/2), g/2)}
		if g < MaxLots {
			want = append(want, LotTopic(s.DigestTopic(), lot, 2*g), LotTopic(s.DigestTopic(), lot+g, 2*g))
		}
		if got := ProviderShardTopics(self, s, g); !slices.Equal(got, want) {
			t.Fatalf("%d lots: %v, want %v", g, got, want)
		}
		// Its own digest topic is one of the halves' topics of its lot of
		// G/2, and its lot of 2G one of its own halves: each count's
		// providers hear the ones next to them.
		if half := ProviderShardTopics(self, s, g/2); !slices.Contains(half, LotTopic(s.DigestTopic(), lot, g)) {
			t.Fatalf("%d lots: its lot of %d does not follow %s", g, g/2, LotTopic(s.DigestTopic(), lot, g))
		}
	}
	if got := ProviderShardTopics(self, s, 2)[3]; got != s.DigestTopic() {
		t.Fatalf("2 lots: the lot it is half of is %s, want the shard's own digest topic", got)
	}
}

// TestShardSizeFromLot: split, a provider counts its shard as the lots
// times its own lot's providers (itself included), whatever count each
// names, or the providers it holds if more; in one lot, those it holds.
func TestShardSizeFromLot(t *testing.T) {
	self := "12D3KooWself"
	var peers []string
	inLot := 1
	for i := range 4000 {
		p := fmt.Sprintf("p%04d", i)
		if Lot(p, 8) == Lot(self, 8) {
			peers = append(peers, p)
			inLot++
		}
	}
	if got := ShardSizeFromLot(self, peers, 8); got != 8*inLot {
		t.Fatalf("its lot of %d in 8 lots: %d, want %d", inLot, got, 8*inLot)
	}
	if got := ShardSizeFromLot(self, peers, 1); got != inLot {
		t.Fatalf("one lot: %d, want the %d it holds", got, inLot)
	}
	// A view holding more than its lot suggests (synced from a renter,
	// say) counts what it holds.
	var others []string
	for i := range 4000 {
		if p := fmt.Sprintf("p%04d", i); Lot(p, 2) != Lot(self, 2) {
			others = append(others, p)
		}
	}
	if got := ShardSizeFromLot(self, others, 2); got != len(others)+1 {
		t.Fatalf("2 lots, %d held of the other lot: %d, want %d", len(others), got, len(others)+1)
	}
	if got := ShardSizeFromLot(self, nil, 8); got != 8 {
		t.Fatalf("alone in 8 lots: %d, want 8", got)
	}
}

// TestJoinLots: a provider in one lot takes the count most of its view
// names when that is more than its own count of the shard (a fresh node
// joining a split shard); in lots it keeps its own count, so a shrinking
// shard can join lots again.
func TestJoinLots(t *testing.T) {
	for _, c := range []struct {
		prev, counted int
		named         map[int]int
		want          int
	}{
		{1, 1, map[int]int{1: 3, 32: 600}, 32},
		{0, 1, map[int]int{16: 40, 32: 60}, 32},
		{1, 2, map[int]int{1: 10, 4: 5}, 2},
		{1, 1, map[int]int{2: 5, 4: 5}, 2},
		{1, 1, map[int]int{3: 900, 2048: 900, 1: 2}, 1},
		{1, 1, nil, 1},
		{8, 4, map[int]int{8: 600}, 4},
		{2, 2, map[int]int{32: 600}, 2},
	} {
		if got := JoinLots(c.prev, c.counted, c.named); got != c.want {
			t.Errorf("JoinLots(%d, %d, %v) = %d, want %d", c.prev, c.counted, c.named, got, c.want)
		}
	}
}
