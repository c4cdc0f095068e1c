package renter

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestRFQGoesToTheLotsTheViewChose: when the market view puts an RFQ on
// two lots of its shard (docs/protocol.md §3.6, step 2), the renter
// publishes it on those lots' topics only, with want_bids split between
// them.
func TestRFQGoesToTheLotsTheViewChose(t *testing.T) {
	r, _, provs := newRenter(t, 2)
	h100 := auction.GPUShard("h100")
	lotTopics := []auction.ShardTopic{
		{Kind: auction.ShardTopicRFQ, Shard: h100, Lot: 0, Lots: 2},
		{Kind: auction.ShardTopicRFQ, Shard: h100, Lot: 1, Lots: 2},
	}
	r.auctioneer.rfqTopics = func(_ *auction.RFQ, shards []auction.Shard, _ bool) []auction.ShardTopic {
		if len(shards) != 1 || shards[0] != h100 {
			t.Errorf("topics asked for shards %v, want [%s]", shards, h100)
		}
		return lotTopics
	}
	var mu sync.Mutex
	heard := map[string][]*auction.RFQ{}
	listen := func(f *fakeProvider, topic string) {
		if err := f.P2P.Subscribe(t.Context(), topic, func(m p2p.Message) {
			rfq, _, err := auction.OpenRFQ(m.Data)
			if err != nil {
				t.Errorf("unreadable RFQ on %s: %v", topic, err)
				return
			}
			mu.Lock()
			heard[topic] = append(heard[topic], rfq)
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	listen(provs[0], lotTopics[0].Topic())
	listen(provs[1], lotTopics[1].Topic())
	listen(provs[0], h100.RFQTopic())
	roomtest.Run(t, r.Run)
	roomtest.Eventually(t, 10*time.Second, "the renter to run", func() bool { return r.bg.running() })
	j, err := r.Submit(fmt.Appendf(nil, "module: %s\ngpus: 1\ngpu: h100\nmax_price: 10\nduration: 10m\nbid_window: 1s\n", testModule))
	if err != nil {
		t.Fatal(err)
	}
	roomtest.Eventually(t, time.Minute, "the job's auction to end", func() bool {
		cur, err := r.db.GetJob(j.ID)
		return err == nil && lease.JobState(cur.State).Terminal()
	})
	mu.Lock()
	defer mu.Unlock()
	want := auction.RFQWantBids(r.auctioneer.wantBids, 1, 1, len(lotTopics))
	for _, st := range lotTopics {
		got := heard[st.Topic()]
		if len(got) != 1 || got[0].WantBids != want {
			t.Errorf("%s: %d RFQs (want_bids %v), want one asking %d bids", st.Topic(), len(got), got, want)
		}
	}
	if n := len(heard[h100.RFQTopic()]); n != 0 {
		t.Errorf("%d RFQs on the shard's own topic, want none: the view chose its lots", n)
	}
}
