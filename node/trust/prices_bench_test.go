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
// summaries stored: each is kept 7 days (summaryRetention), opened with
// its signatures checked the first time it is read, and weighed at every
// reading.
//
//	go test ./node/trust -run '^$' -bench BenchmarkPriceIndex -benchtime 5x
func BenchmarkPriceIndex(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("summaries=%d", n), func(b *testing.B) {
			peers := roomtest.Peers(b, 1)
			tr := newTrust(b, peers[0])
			now := peers[0].Clock.Now()
			var keys []crypto.PrivKey
			for range 8 {
				sk, _, err := crypto.GenerateEd25519Key(nil)
				if err != nil {
					b.Fatal(err)
				}
				keys = append(keys, sk)
			}
			for i := range n {
				at := now.Add(-time.Duration(i) * time.Minute)
				raw, err := auctiontest.Summary(keys[i%4], keys[4+i%4], auctiontest.Lease{Model: "a10", Tier: auction.TierBronze,
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
