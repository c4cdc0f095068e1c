package renter

import (
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestShardSilence: a shard whose expected bidders stayed silent and sent
// no bid asks everyone for silenceFor, until an auction there has its
// expected bidders answer; a shard without a subscriber gets no wait for
// as long.
func TestShardSilence(t *testing.T) {
	s := newShardSilence()
	now := time.UnixMilli(1_700_000_000_000)
	a10, t4 := auction.GPUShard("a10"), auction.GPUShard("t4")
	s.settle([]auction.Shard{a10}, 3, 4, 3, now)
	if s.everyone([]auction.Shard{a10}, now) {
		t.Fatal("an answered auction asks everyone")
	}
	s.settle([]auction.Shard{a10}, 1, 200, 1, now)
	if s.everyone([]auction.Shard{a10}, now) {
		t.Fatal("an auction that got a bid asks everyone")
	}
	s.settle([]auction.Shard{a10}, 0, 200, 0, now)
	if !s.everyone([]auction.Shard{t4, a10}, now) || s.everyone([]auction.Shard{t4}, now) {
		t.Fatal("only the silent shard asks everyone")
	}
	s.settle([]auction.Shard{a10}, 1, 201, 1, now)
	if !s.everyone([]auction.Shard{a10}, now) {
		t.Fatal("a bid from outside the silent expected bidders cleared the shard")
	}
	if s.everyone([]auction.Shard{a10}, now.Add(silenceFor)) {
		t.Fatal("silence outlived silenceFor")
	}
	s.settle([]auction.Shard{a10}, 4, 4, 4, now)
	if s.everyone([]auction.Shard{a10}, now) {
		t.Fatal("an auction whose expected bidders answered does not clear the shard")
	}
	s.subscribers(t4, false, now)
	if s.waitForSubscriber(t4, now) || !s.waitForSubscriber(a10, now) || !s.waitForSubscriber(t4, now.Add(silenceFor)) {
		t.Fatal("a shard without subscribers gets no wait, for silenceFor")
	}
	s.subscribers(t4, true, now)
	if !s.waitForSubscriber(t4, now) {
		t.Fatal("a shard with a subscriber again gets the wait")
	}
	for i := range 2 * maxSilentShards {
		s.subscribers(auction.GPUShard(string(rune('a'+i%26))+string(rune('a'+i/26))), false, now)
	}
	if len(s.noSub) > maxSilentShards {
		t.Fatalf("%d shards remembered, want at most %d", len(s.noSub), maxSilentShards)
	}
}

// TestWindowExpectingNobodyClosesEarly: a window whose view expects no
// provider closes after nobodyGrace, not at its end.
func TestWindowExpectingNobodyClosesEarly(t *testing.T) {
	w := newBidWindows(bidWindowDeps{now: time.Now})
	pa := newPendingAuction(&auction.RFQ{BidWindowMs: 8_000}, "rfq", "job", nil)
	w.open(pa)
	w.expect(pa, map[string]bool{})
	select {
	case <-pa.early:
	case <-time.After(7 * time.Second):
		t.Fatal("the window expecting nobody ran its full length")
	}
	if g := nobodyGrace(60 * time.Second); g != 15*time.Second {
		t.Fatalf("nobodyGrace(60s) = %s", g)
	}
	if g := nobodyGrace(time.Second); g != time.Second {
		t.Fatalf("nobodyGrace(1s) = %s", g)
	}
}
