package provider

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestLotCounts: a provider splits its shard into lots as its view of the
// shard grows past auction.LotSplitAt, keeps the count between the
// thresholds, joins the new lot's topics at each change (and leaves them
// when the shard is in one lot again or no longer its), and sends shard
// messages to its lot's topic only (step 3).
func TestLotCounts(t *testing.T) {
	size := map[auction.Shard]int{}
	var followed []string
	l := newLotCounts("12D3KooWpeer", nil, func(s auction.Shard, _ int) int { return size[s] },
		func(s auction.Shard, lots int) { followed = append(followed, fmt.Sprintf("%s:%d", s, lots)) })
	h100, cpu := auction.GPUShard("h100"), auction.ShardCPU
	shards := []auction.Shard{h100, cpu}
	step := func(n int, want map[auction.Shard]int, wantFollowed ...string) {
		t.Helper()
		size[h100] = n
		followed = nil
		got := l.update(shards)
		if len(got) != len(want) || got[h100] != want[h100] || !slices.Equal(followed, wantFollowed) {
			t.Fatalf("%d providers: lots %v, followed %v; want %v, %v", n, got, followed, want, wantFollowed)
		}
	}
	step(999, map[auction.Shard]int{})
	if got := l.topics(h100, h100.DigestTopic()); !slices.Equal(got, []string{h100.DigestTopic()}) {
		t.Fatalf("one lot: topics %v", got)
	}
	step(1000, map[auction.Shard]int{h100: 2}, "gpu/h100:2")
	lotTopic := auction.LotTopic(h100.AttestTopic(), auction.Lot("12D3KooWpeer", 2), 2)
	if got := l.topics(h100, h100.AttestTopic()); !slices.Equal(got, []string{lotTopic}) {
		t.Fatalf("two lots: topics %v, want %s only", got, lotTopic)
	}
	if got := l.topics(cpu, cpu.AttestTopic()); !slices.Equal(got, []string{cpu.AttestTopic()}) {
		t.Fatalf("the CPU shard, in one lot: topics %v", got)
	}
	step(600, map[auction.Shard]int{h100: 2}) // between the thresholds: no change, nothing joined
	step(2000, map[auction.Shard]int{h100: 4}, "gpu/h100:4")
	step(400, map[auction.Shard]int{}, "gpu/h100:1")
	step(1000, map[auction.Shard]int{h100: 2}, "gpu/h100:2")
	followed = nil
	if got := l.update([]auction.Shard{cpu}); len(got) != 0 || !slices.Equal(followed, []string{"gpu/h100:1"}) {
		t.Fatalf("the shard left: lots %v, followed %v", got, followed)
	}
}

// TestDigestGoesToItsLot: in a shard of two lots the provider's digest
// is version 2, names the count, and goes to its lot's digest topic.
func TestDigestGoesToItsLot(t *testing.T) {
	r := newRoom(t, 1)
	shard := r.p.Shards()[0]
	r.p.lots.size = func(s auction.Shard, _ int) int {
		if s == shard {
			return auction.LotSplitAt
		}
		return 1
	}
	lotTopic := auction.LotTopic(shard.DigestTopic(), auction.Lot(r.p.self.String(), 2), 2)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got := make(chan []byte, 4)
	if err := r.renter.P2P.Subscribe(ctx, lotTopic, func(m p2p.Message) { got <- m.Data }); err != nil {
		t.Fatal(err)
	}
	for len(r.prov.P2P.ListTopicPeers(lotTopic)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the provider never saw the renter on the lot topic")
		case <-time.After(20 * time.Millisecond):
		}
	}
	fakePublished(t, r)
	if !r.p.digest.send(ctx, false, true) {
		t.Fatal("no digest went out")
	}
	select {
	case raw := <-got:
		d, _, err := auction.OpenDigest(raw)
		if err != nil || d.V != auction.DigestVersion || d.LotsOn(shard) != 2 || !d.OnTopic(auction.ShardTopic{Kind: auction.ShardTopicDigest, Shard: shard, Lot: auction.Lot(r.p.self.String(), 2), Lots: 2}) {
			t.Fatalf("digest on the lot topic: %+v, %v; want version %d naming 2 lots, in its lot", d, err, auction.DigestVersion)
		}
	case <-ctx.Done():
		t.Fatal("no digest on the lot topic")
	}
}

// TestLotCountsJoinWhatTheViewNames: a provider in one lot whose own count
// of the shard is small (a fresh node hears nobody on the shard's topics
// once the shard is split past two lots) joins the count most of its
// view's backed providers name, the smaller on a tie and never fewer lots
// than its own count gives; once in lots it counts the shard from its lot.
func TestLotCountsJoinWhatTheViewNames(t *testing.T) {
	h100 := auction.GPUShard("h100")
	var named map[int]int
	sizeAt := map[int]int{} // the shard's size as counted at each count (one lot: 0 or 1)
	var followed []string
	l := newLotCounts("12D3KooWpeer", nil, func(_ auction.Shard, lots int) int { return sizeAt[max(lots, 1)] },
		func(s auction.Shard, lots int) { followed = append(followed, fmt.Sprintf("%s:%d", s, lots)) })
	l.named = func(auction.Shard) map[int]int { return named }
	step := func(what string, want int, wantFollowed ...string) {
		t.Helper()
		followed = nil
		got := l.update([]auction.Shard{h100})
		if max(got[h100], 1) != want || !slices.Equal(followed, wantFollowed) {
			t.Fatalf("%s: lots %v, followed %v; want %d, %v", what, got, followed, want, wantFollowed)
		}
	}
	sizeAt[1] = 1 // alone on the shard's topic
	step("nothing named", 1)
	named = map[int]int{1: 3, 4: 10, 8: 40}
	sizeAt[8] = 8 * 700 // its lot of 8 holds 700
	step("most name 8", 8, "gpu/h100:8")
	step("in lots, counting from its lot", 8)
	sizeAt[8] = 8 * 200 // below auction.LotJoinBelow a lot: it counts for itself
	step("its lot shrank", 4, "gpu/h100:4")

	l = newLotCounts("12D3KooWother", nil, func(_ auction.Shard, lots int) int { return sizeAt[max(lots, 1)] }, nil)
	l.named = func(auction.Shard) map[int]int { return named }
	named = map[int]int{2: 10, 4: 10}
	step("a tie", 2)
	l = newLotCounts("12D3KooWthird", nil, func(_ auction.Shard, lots int) int { return sizeAt[max(lots, 1)] }, nil)
	l.named = func(auction.Shard) map[int]int { return named }
	named, sizeAt[1] = map[int]int{1: 50, 2: 3}, 2*auction.LotSplitAt
	step("its own count above what is named", 4)
}
