package node

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestShardTopicsMeetUnderTheRFQKey: every topic of a shard is looked up
// under its RFQ topic's key, which only providers announce (the digest
// topic's own key, announced for earlier releases, is no longer), and
// renters announce nothing on shard topics. A lot's topics meet under
// the lot's RFQ topic. Other topics keep their own key.
func TestShardTopicsMeetUnderTheRFQKey(t *testing.T) {
	s := auction.GPUShard("h100")
	rfq := s.RFQTopic()
	lotRFQ := auction.LotTopic(rfq, 3, 32)
	for _, tc := range []struct {
		provider               bool
		topic                  string
		wantFind, wantAnnounce string
	}{
		{true, rfq, rfq, rfq},
		{true, s.DigestTopic(), "", ""},
		{true, s.AttestTopic(), "", ""},
		{false, rfq, rfq, ""},
		{false, s.DigestTopic(), rfq, ""},
		{false, s.AttestTopic(), rfq, ""},
		{true, lotRFQ, lotRFQ, lotRFQ},
		{true, auction.LotTopic(s.AttestTopic(), 3, 32), "", ""},
		{true, auction.LotTopic(s.DigestTopic(), 3, 64), "", ""},
		{false, auction.LotTopic(s.DigestTopic(), 3, 32), lotRFQ, ""},
		{true, p2p.TopicAttest, p2p.TopicAttest, p2p.TopicAttest},
		{false, "idlegrid/rfq/2/gpu/H100", "idlegrid/rfq/2/gpu/H100", "idlegrid/rfq/2/gpu/H100"},
	} {
		find, announce := shardRendezvous(tc.provider)(tc.topic)
		if find != tc.wantFind || announce != tc.wantAnnounce {
			t.Errorf("provider %v, %s: find %q announce %q, want %q and %q", tc.provider, tc.topic, find, announce, tc.wantFind, tc.wantAnnounce)
		}
	}
}

// TestProviderFollowsItsLot: a provider joins its lot's RFQ, digest and
// attestation topics for a count, moves to the new lot's when the count
// changes, keeping of the old lot only the digest topic of the lot its new
// one is half of, and leaves them when its shard is in one lot again,
// keeping the lots' digest topics its shard splits into (step 3:
// auction.ProviderShardTopics).
func TestProviderFollowsItsLot(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	n := &Node{log: slog.New(slog.DiscardHandler), p2p: peers[0].P2P, runCtx: ctx}
	watcher := peers[1].P2P
	s := auction.GPUShard("h100")
	self := peers[0].P2P.ID().String()
	lotTopics := func(lots int) []string {
		var out []string
		for _, topic := range []string{s.RFQTopic(), s.DigestTopic(), s.AttestTopic()} {
			out = append(out, auction.LotTopic(topic, auction.Lot(self, lots), lots))
		}
		return out
	}
	// The watcher joins every topic, and sees whom it meets there.
	for _, lots := range []int{2, 4} {
		for _, topic := range lotTopics(lots) {
			if err := watcher.Subscribe(ctx, topic, func(p2p.Message) {}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// seen counts the lot topics of a count where the watcher meets the
	// provider, and says whether its digest topic is one of them.
	seen := func(lots int) (n int, digest bool) {
		for _, topic := range lotTopics(lots) {
			if slices.Contains(watcher.ListTopicPeers(topic), peers[0].P2P.ID()) {
				n++
				digest = digest || topic == lotTopics(lots)[1]
			}
		}
		return n, digest
	}
	on := func(lots, want int, digest bool) func() bool {
		return func() bool { n, d := seen(lots); return n == want && d == digest }
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case <-ctx.Done():
				t.Fatal(what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	n.followLot(s, 2)
	wait("the provider in its lot of 2 and the digests of its halves of 4", func() bool { return on(2, 3, true)() && on(4, 1, true)() })
	n.followLot(s, 4)
	wait("the provider moved to its lot of 4, keeping the digests of its lot of 2", func() bool { return on(4, 3, true)() && on(2, 1, true)() })
	n.followLot(s, 1)
	wait("the provider left its lots but the digests of its lot of 2", func() bool { return on(4, 0, false)() && on(2, 1, true)() })
}
