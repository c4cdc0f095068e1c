package trust

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// BenchmarkReputationFold times one fold of a node's stored evidence
// (ReputationBook.fold, the background's work every few seconds and after
// each outcome) against how much evidence the node holds: its own ended
// leases and other renters' gossiped receipts, which are kept 30 days
// (gossipedReceiptRetention), at most maxGossipedReceipts of them
// (receipt_book.go). The receipt book takes the stored receipts before the
// timer (the steady state: a fold reads the store's receipt keys and
// every own lease).
//
//	go test ./node/trust -run '^$' -bench BenchmarkReputationFold -benchtime 5x
func BenchmarkReputationFold(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000, 200_000} {
		b.Run(fmt.Sprintf("leases+receipts=%d", n), func(b *testing.B) {
			peers := roomtest.Peers(b, 1)
			tr := newTrust(b, peers[0])
			now := peers[0].Clock.Now()
			// 64 providers: the receipt book keeps 2,048 of each
			// (maxReceiptsPerProvider), so they can fill it.
			type prov struct {
				key crypto.PrivKey
				id  string
			}
			var providers []prov
			for range 64 {
				sk, id := newKey(b)
				providers = append(providers, prov{sk, id.String()})
			}
			// A renter key per four receipts: pairs of up to 4 receipts
			// about each provider, which the receipt book keeps whole
			// (up to maxGossipedReceipts in all).
			var renters []crypto.PrivKey
			for i := range n {
				at := now.Add(-time.Duration(i%(30*24)) * time.Hour)
				prov := providers[i%len(providers)]
				l := &store.Lease{ID: fmt.Sprintf("own-%06d", i), Side: lease.SideRenter, Provider: prov.id,
					Renter: peers[0].ID.String(), GPUs: []string{"GPU-0"}, ExpectedSec: 3600, State: lease.Completed,
					UpdatedAtMs: at.UnixMilli()}
				if err := tr.db.PutLease(l); err != nil {
					b.Fatal(err)
				}
				if i%(4*len(providers)) == 0 {
					sk, _, err := crypto.GenerateEd25519Key(nil)
					if err != nil {
						b.Fatal(err)
					}
					renters = append(renters, sk)
				}
				renterKey := renters[len(renters)-1]
				renter, err := peer.IDFromPrivateKey(renterKey)
				if err != nil {
					b.Fatal(err)
				}
				award := attest.RecordID(fmt.Appendf(nil, "gossiped-%06d", i)).String()
				v, err := attest.SealVoucher(&attest.Voucher{V: attest.RecordsVersion, Lease: award, Renter: renter.String(),
					Provider: prov.id, Seq: 1, AmountMicro: 10_000, CoveredUntilMs: at.UnixMilli(), IssuedMs: at.UnixMilli()}, renterKey)
				if err != nil {
					b.Fatal(err)
				}
				raw, err := attest.SealReceipt(&attest.Receipt{V: attest.RecordsVersion, Lease: award, Provider: prov.id,
					Renter: renter.String(), Outcome: lease.Completed, GPUMs: 3_600_000, FirstSeq: 1, LastSeq: 2, AtMs: at.UnixMilli(),
					Voucher: v}, prov.key)
				if err != nil {
					b.Fatal(err)
				}
				if err := tr.db.PutReceiptTTL(attest.RecordID(raw).String(), raw, gossipedReceiptRetention); err != nil {
					b.Fatal(err)
				}
			}
			rep := tr.Reputation()
			if res := rep.fold(false); len(res) != len(providers) {
				b.Fatalf("the fold scored %d providers, want %d", len(res), len(providers))
			}
			b.ResetTimer()
			for b.Loop() {
				rep.fold(false)
			}
			b.ReportMetric(float64(tr.receipts.gossiped()), "receipts_kept")
		})
	}
}
