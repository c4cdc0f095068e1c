package trust

import (
	"fmt"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// BenchmarkReputationFold times one fold of a node's stored evidence
// (ReputationBook.fold, the background's work every few seconds and after
// each outcome) against how much evidence the node holds: its own ended
// leases and other renters' gossiped receipts, which are kept 30 days
// (gossipedReceiptRetention). The receipts are parsed and checked once
// before the timer (the steady state: a fold re-reads and re-hashes each
// stored receipt, and takes the parse from the cache).
//
//	go test ./node/trust -run '^$' -bench BenchmarkReputationFold -benchtime 5x
func BenchmarkReputationFold(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("leases+receipts=%d", n), func(b *testing.B) {
			peers := roomtest.Peers(b, 12)
			tr := newTrust(b, peers[0])
			now := peers[0].Clock.Now()
			renters, providers := peers[1:4], peers[4:]
			for i := range n {
				at := now.Add(-time.Duration(i%(30*24)) * time.Hour)
				prov := providers[i%len(providers)]
				l := &store.Lease{ID: fmt.Sprintf("own-%06d", i), Side: lease.SideRenter, Provider: prov.ID.String(),
					Renter: peers[0].ID.String(), GPUs: []string{"GPU-0"}, ExpectedSec: 3600, State: lease.Completed,
					UpdatedAtMs: at.UnixMilli()}
				if err := tr.db.PutLease(l); err != nil {
					b.Fatal(err)
				}
				renter := renters[i%len(renters)]
				award := attest.RecordID(fmt.Appendf(nil, "gossiped-%06d", i)).String()
				v, err := attest.SealVoucher(&attest.Voucher{V: attest.RecordsVersion, Lease: award, Renter: renter.ID.String(),
					Provider: prov.ID.String(), Seq: 1, AmountMicro: 10_000, CoveredUntilMs: at.UnixMilli(), IssuedMs: at.UnixMilli()}, renter.Key)
				if err != nil {
					b.Fatal(err)
				}
				raw, err := attest.SealReceipt(&attest.Receipt{V: attest.RecordsVersion, Lease: award, Provider: prov.ID.String(),
					Renter: renter.ID.String(), Outcome: "finished", FirstSeq: 1, LastSeq: 2, AtMs: at.UnixMilli(), Voucher: v}, prov.Key)
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
		})
	}
}
