package node

import (
	"testing"

	"github.com/idlegrid/idlegrid/auction"
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
		{true, s.DigestTopic(), rfq, ""},
		{true, s.AttestTopic(), rfq, ""},
		{false, rfq, rfq, ""},
		{false, s.DigestTopic(), rfq, ""},
		{false, s.AttestTopic(), rfq, ""},
		{true, lotRFQ, lotRFQ, lotRFQ},
		{true, auction.LotTopic(s.AttestTopic(), 3, 32), lotRFQ, ""},
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
