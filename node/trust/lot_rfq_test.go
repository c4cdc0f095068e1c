package trust

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// TestRFQTopicsAndExpectedBiddersOnLots: once every backed provider of a
// shard names lots for it, a renter's RFQ goes to the lots of its
// cheapest proven offers (before any is proven, to every lot with a
// fitting offer: its providers no longer follow the shard's topic), and
// on each lot topic it expects only that lot's members to bid (and on
// the shard's own topic only providers naming no lots); an unproven
// provider naming no lots draws no RFQ to the shard's topic, and an RFQ
// asking everyone goes there and to every lot.
func TestRFQTopicsAndExpectedBiddersOnLots(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	clock := peers[0].Clock
	now := clock.Now()
	a10 := auction.GPUShard("a10")
	const lots = 2
	byLot := map[int][]string{}
	for len(byLot[0]) < 2 || len(byLot[1]) < 2 {
		sk, id := provider(t, recs, now)
		d, err := auction.NewDigest(auction.DigestInput{Capacity: testCapacity(sk, now), Seq: 1, Now: now, TTL: 30 * time.Minute, Lots: map[auction.Shard]int{a10: lots}})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := auction.SealDigest(d, sk)
		if err != nil {
			t.Fatal(err)
		}
		offer(t, tr, id, raw)
		byLot[auction.Lot(id.String(), lots)] = append(byLot[auction.Lot(id.String(), lots)], id.String())
	}
	drainChecks(t, tr)
	clock.Advance(settleFor)
	r := &auction.RFQ{
		Resources: auction.Resources{GPUs: 1}, Runtime: "wasm", Tier: auction.TierBronze, MaxPriceMicro: 5_000_000,
		ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: 16, BidWindowMs: 1000,
	}
	shards := []auction.Shard{a10}
	want := []auction.ShardTopic{{Kind: auction.ShardTopicRFQ, Shard: a10, Lot: 0, Lots: lots}, {Kind: auction.ShardTopicRFQ, Shard: a10, Lot: 1, Lots: lots}}
	// Unproven, the providers draw the RFQ to every lot with a fitting
	// offer (both here), sorted by price.
	if got := tr.RFQTopics(r, shards, false); len(got) != 2 || !slices.Contains(got, want[0]) || !slices.Contains(got, want[1]) {
		t.Fatalf("no provider proven: topics %v, want both lots", got)
	}
	// Each bids once (backed newcomers are expected on their lots; none on
	// the shard's own topic, which they no longer follow), and is proven.
	if got := tr.ExpectedBidders(r, "rfq-shard", auction.ShardRFQTopics(shards)); len(got) != 0 {
		t.Fatalf("on the shard's own topic the renter expects %v, whose providers are all in lots", got)
	}
	all := tr.ExpectedBidders(r, "rfq-0", want)
	if len(all) != len(byLot[0])+len(byLot[1]) {
		t.Fatalf("on both lots the renter expects %d providers, want all %d", len(all), len(byLot[0])+len(byLot[1]))
	}
	for p := range all {
		tr.NoteBid("rfq-0", p)
	}
	got := tr.RFQTopics(r, shards, false)
	if !slices.Equal(got, want) {
		t.Fatalf("every provider in %d lots and proven: topics %v, want %v", lots, got, want)
	}
	for lot, members := range byLot {
		got := tr.ExpectedBidders(r, fmt.Sprint("rfq-lot-", lot), want[lot:lot+1])
		var names []string
		for p := range got {
			names = append(names, p)
		}
		slices.Sort(names)
		slices.Sort(members)
		if !slices.Equal(names, members) {
			t.Errorf("lot %d: expected %v, want its members %v", lot, names, members)
		}
	}
	// A provider naming no lots (an earlier release, or a fresh node) is
	// the shard's own topic's lot: unproven, it draws no RFQ there while
	// the lots hold proven offers; an RFQ asking everyone reaches it.
	sk, id := provider(t, recs, now)
	offer(t, tr, id, sealedDigest(t, sk, clock.Now(), 1))
	drainChecks(t, tr)
	if got := tr.RFQTopics(r, shards, false); !slices.Equal(got, want) {
		t.Fatalf("one unproven provider outside lots: topics %v, want the lots %v", got, want)
	}
	if got := tr.RFQTopics(r, shards, true); !slices.Equal(got, append(auction.ShardRFQTopics(shards), want...)) {
		t.Fatalf("asking everyone: topics %v, want the shard's and both lots", got)
	}
}
