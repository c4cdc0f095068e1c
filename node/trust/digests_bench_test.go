package trust

import (
	"fmt"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// BenchmarkShardDigests times one reading of a shard's proven digests
// (Trust.Digests) against the shard's size: what a provider's bid
// decision read on every RFQ before it kept a reading for a second
// (node/provider/market_views.go).
//
//	go test ./node/trust -run '^$' -bench BenchmarkShardDigests -benchtime 20x
func BenchmarkShardDigests(b *testing.B) {
	for _, n := range []int{200, 2_000, 20_000} {
		b.Run(fmt.Sprintf("providers=%d", n), func(b *testing.B) {
			peers := roomtest.Peers(b, 1)
			tr := newTrust(b, peers[0])
			recs := fakeRecords(tr)
			now := peers[0].Clock.Now()
			for i := range n {
				sk, id := provider(b, recs, now)
				if v := offer(b, tr, id, sealedDigest(b, sk, now, 1)); v != p2p.Withhold {
					b.Fatalf("provider %d's first digest: %v", i, v)
				}
				if i%500 == 499 {
					drainChecks(b, tr)
				}
				tr.NoteBid("rfq", id.String()) // seen to bid: proven
			}
			drainChecks(b, tr)
			shard := auction.GPUShard("a10")
			if got := len(tr.Digests(shard)); got != n {
				b.Fatalf("%d proven digests, want %d", got, n)
			}
			b.ResetTimer()
			for b.Loop() {
				tr.Digests(shard)
			}
		})
	}
}
