package trust

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestLotTopicsHoldTheirLot: on a lot topic (docs/protocol.md §3.6), a
// digest is admitted only if it is version 2, names the topic's count
// for its shard and its provider is in the topic's lot; a heartbeat or
// receipt only of a provider of the lot; a summary on any lot of its
// shard. A version 2 digest is read on the shard's own topic too.
func TestLotTopicsHoldTheirLot(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	prov, renter := peers[1], peers[2]
	ctx := context.Background()
	now := prov.Clock.Now()
	c := testCapacity(prov.Key, now)
	recs.put(c)
	a10 := auction.GPUShard("a10")
	const lots = 4
	mine := auction.Lot(prov.ID.String(), lots)
	other := (mine + 1) % lots
	lotTopic := func(topic string, lot int) string { return auction.LotTopic(topic, lot, lots) }

	d, err := auction.NewDigest(auction.DigestInput{Capacity: c, Seq: 2, Now: now, TTL: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := auction.SealDigest(d, prov.Key)
	if err != nil {
		t.Fatal(err)
	}
	d.V, d.Lots = auction.DigestVersion, map[auction.Shard]uint32{a10: lots}
	v2, err := auction.SealDigest(d, prov.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		topic string
		raw   []byte
		want  p2p.Verdict
	}{
		{"version 1 on a lot topic", lotTopic(a10.DigestTopic(), mine), v1, p2p.Reject},
		{"version 2 on another lot", lotTopic(a10.DigestTopic(), other), v2, p2p.Reject},
		{"version 2 on its lot of another count", auction.LotTopic(a10.DigestTopic(), auction.Lot(prov.ID.String(), 8), 8), v2, p2p.Reject},
		{"version 2 on its lot, unchecked", lotTopic(a10.DigestTopic(), mine), v2, p2p.Withhold},
	} {
		if got := tr.ValidateDigest(c.topic)(ctx, prov.ID, prov.ID, c.raw); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	drainChecks(t, tr)
	if got := tr.ValidateDigest(lotTopic(a10.DigestTopic(), mine))(ctx, prov.ID, prov.ID, v2); got != p2p.Accept {
		t.Errorf("version 2 on its lot, backed: %v, want accept", got)
	}
	if got := tr.ValidateDigest(a10.DigestTopic())(ctx, prov.ID, prov.ID, v2); got != p2p.Accept && got != p2p.Ignore {
		t.Errorf("version 2 on the shard's own topic: %v, want read (accepted, or ignored as already held)", got)
	}

	_, window := a10Beats(t, prov, now)
	beat := window(now)
	sumRaw, sum := summaryOf(t, renter, prov, "a10-24gb", now)
	receipt := receiptOf(t, renter, prov, sum, now)
	for _, c := range []struct {
		name   string
		lot    int
		signer *roomtest.Peer
		raw    []byte
		want   p2p.Verdict
	}{
		{"heartbeat on another lot", other, prov, beat, p2p.Reject},
		{"heartbeat on its lot", mine, prov, beat, p2p.Accept},
		{"receipt on another lot", other, prov, receipt, p2p.Reject},
		{"receipt on its lot", mine, prov, receipt, p2p.Accept},
		{"summary on its provider's lot", mine, renter, sumRaw, p2p.Accept},
		{"summary on another lot", other, renter, sumRaw, p2p.Accept},
	} {
		if got, _ := tr.ValidateShardAttest(lotTopic(a10.AttestTopic(), c.lot))(ctx, c.signer.ID, c.signer.ID, c.raw); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
