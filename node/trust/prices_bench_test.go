package trust

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// BenchmarkPriceIndex times one reading of the price index (PriceIndex,
// which a provider's scarcity cap reads every 10 s) against the award
// summaries held: each is kept 7 days (summaryRetention), opened with its
// signatures checked once (when it arrives, or at the first reading after
// a restart), and weighed at every reading. 64 providers, all checked, and
// 8 renters.
//
//	go test ./node/trust -run '^$' -bench BenchmarkPriceIndex -benchtime 5x
func BenchmarkPriceIndex(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 60_000} {
		b.Run(fmt.Sprintf("summaries=%d", n), func(b *testing.B) {
			peers := roomtest.Peers(b, 1)
			tr := newTrust(b, peers[0])
			now := peers[0].Clock.Now()
			var providers, renters []crypto.PrivKey
			for i := range 72 {
				sk, id := newKey(b)
				if i < 64 {
					providers = append(providers, sk)
					tr.ev.update(id.String(), now, func(ev *peerEvidence) { ev.everBacked = true })
				} else {
					renters = append(renters, sk)
				}
			}
			for i := range n {
				at := now.Add(-time.Duration(i) * 10 * time.Second)
				raw, err := auctiontest.Summary(renters[i%8], providers[i%64], auctiontest.Lease{Model: "a10", Tier: auction.TierBronze,
					GPUs: 1, PriceMicro: uint64(1_000_000 + i%1000), At: at})
				if err != nil {
					b.Fatal(err)
				}
				if err := tr.db.PutSummary(attest.RecordID(raw).String(), raw, at.Add(summaryRetention)); err != nil {
					b.Fatal(err)
				}
			}
			// The steady state: every stored summary opened once before.
			if _, err := tr.PriceIndex(now.Add(-24*time.Hour), now); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr.PriceIndex(now.Add(-24*time.Hour), now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
