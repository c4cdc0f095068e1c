package nodetest_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestAuctionsRunInLots: lots (docs/protocol.md §3.6) end to end, with
// every shard split in two (the providers' lot rule replaced: a real split
// needs a thousand providers). The providers join their lots' topics and
// name the count in their digests; the renter's first jobs go to the
// shard's topic (nobody is proven yet), and once the providers are, its
// RFQs go to the lots with the cheapest proven offers, where the lots'
// members decide them as their lot's auctions, and the jobs are leased.
func TestAuctionsRunInLots(t *testing.T) {
	const lots = 2
	provs := []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}, {gpus: 1, bronze: 0.7}, {gpus: 1, bronze: 0.8}}
	c, renter := auctionCluster(t, provs, nodetest.Options{LotsFor: func(int, int) int { return lots }})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	a10 := auction.GPUShard("a10")
	renterMember := c.ByRole(node.RoleRenter)[0]
	onLots := func() (n float64) {
		for lot := range lots {
			n += nodetest.CounterSum(t, renterMember.Registry, "idlegrid_gossip_messages_total", "topic", auction.LotTopic(a10.RFQTopic(), lot, lots))
		}
		return n
	}
	run := func(name string) {
		t.Helper()
		j, err := renter.Renter().Submit(jobYAML(jobOpts{name: name, gpus: 1, duration: "1s"}))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnfilled, lease.JobFailed)
		if j.State != lease.JobCompleted {
			t.Fatalf("job %s: %s (%s)", name, j.State, j.Reason)
		}
	}
	i := 0
	for ; onLots() == 0; i++ {
		if i == 12 {
			t.Fatalf("%d jobs and no RFQ on a lot's topic", i)
		}
		run(fmt.Sprintf("job-%d", i))
	}
	t.Logf("the RFQ of warm-up job %d (counting from 1) was the first on a lot's topic; the ones before went to the shard's", i)
	// The providers that won jobs are proven, and name their lots.
	ds := renter.Trust().Digests(a10)
	if len(ds) == 0 {
		t.Fatal("no proven provider in the renter's view")
	}
	for _, d := range ds {
		if d.LotsOn(a10) != lots {
			t.Fatalf("provider %s's digest puts %s in %d lots, want %d", d.Peer, a10, d.LotsOn(a10), lots)
		}
	}
	// Jobs auctioned in lots are leased.
	for i := range 3 {
		before := onLots()
		run(fmt.Sprintf("lot-job-%d", i))
		if onLots() == before {
			t.Fatalf("lot job %d: its RFQ went to no lot's topic", i)
		}
	}
	// Step 3: the providers left the shard's RFQ and attestation topics
	// (the renter, which follows both lots, meets them on their lots'
	// attestation topics only) and keep its digest topic, the lot their
	// lots of 2 are halves of.
	provIDs := map[peer.ID]bool{}
	for _, m := range c.ByRole(node.RoleProvider) {
		provIDs[m.Node.ID()] = true
	}
	met := func(topic string) (n int) {
		for _, p := range renter.P2P().ListTopicPeers(topic) {
			if provIDs[p] {
				n++
			}
		}
		return n
	}
	onLotAttest := func() (n int) {
		for lot := range lots {
			n += met(auction.LotTopic(a10.AttestTopic(), lot, lots))
		}
		return n
	}
	if err := nodetest.WaitFor(ctx, "the renter to meet every provider on its lot's attestation topic and none on the shard's", func() bool {
		return met(a10.AttestTopic()) == 0 && onLotAttest() == len(provIDs) && met(a10.DigestTopic()) == len(provIDs)
	}); err != nil {
		t.Fatalf("%v: providers met on the shard's attestation topic %d, on the lots' %d, on the shard's digest topic %d of %d",
			err, met(a10.AttestTopic()), onLotAttest(), met(a10.DigestTopic()), len(provIDs))
	}
	// And hold none of them joined: a topic left is closed, or a provider
	// whose lots keep changing would run out of topics (p2p.Config.MaxTopics).
	for _, m := range c.ByRole(node.RoleProvider) {
		if err := nodetest.WaitFor(ctx, "the provider to leave the shard's RFQ and attestation topics", func() bool {
			joined := m.Node.P2P().JoinedTopics()
			return !slices.Contains(joined, a10.RFQTopic()) && !slices.Contains(joined, a10.AttestTopic())
		}); err != nil {
			t.Fatalf("%v: provider %s still joined to %v", err, m.Node.ID(), m.Node.P2P().JoinedTopics())
		}
	}
}

// TestRenterFollowsItsLots: with every shard split into 8 lots (the
// providers' lot rule replaced), the renter follows the digest and
// attestation topics of auction.LotsFollowed of them, from the one its
// own peer ID hashes to, and of no other lot (docs/protocol.md §3.6).
func TestRenterFollowsItsLots(t *testing.T) {
	const lots = 8
	provs := []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}
	_, renter := auctionCluster(t, provs, nodetest.Options{LotsFor: func(int, int) int { return lots }})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a10 := auction.GPUShard("a10")
	followed := auction.FollowedLots(renter.ID().String(), lots, auction.LotsFollowed)
	if len(followed) != auction.LotsFollowed {
		t.Fatalf("the renter follows %v of %d lots", followed, lots)
	}
	want := map[string]bool{}
	for _, lot := range followed {
		for _, topic := range []string{a10.DigestTopic(), a10.AttestTopic()} {
			want[auction.LotTopic(topic, lot, lots)] = true
		}
	}
	lotTopics := func() map[string]bool {
		out := map[string]bool{}
		for _, topic := range renter.P2P().JoinedTopics() {
			if st, err := auction.ParseShardTopic(topic); err == nil && st.Lots > 1 {
				out[topic] = true
			}
		}
		return out
	}
	if err := nodetest.WaitFor(ctx, "the renter to follow its lots", func() bool { return len(lotTopics()) >= len(want) }); err != nil {
		t.Fatal(err)
	}
	if got := lotTopics(); !maps.Equal(got, want) {
		t.Fatalf("the renter follows lot topics %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}
