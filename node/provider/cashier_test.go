package provider

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// runningLease stores a provider-side lease that started work at start.
func (r *room) runningLease(t *testing.T, start time.Time) *store.Lease {
	t.Helper()
	l := &store.Lease{
		ID: attest.RecordID([]byte("award " + start.String())).String(), Side: lease.SideProvider,
		Renter: r.renter.ID.String(), Provider: r.prov.ID.String(), GPUs: []string{"GPU-1"},
		PriceMicro: 2_000_000, Tier: "silver", State: lease.Running, Runtime: "wasm",
		StartsAtMs: start.UnixMilli(), WorkStartedMs: start.UnixMilli(), EndsAtMs: start.Add(time.Hour).UnixMilli(),
	}
	if err := r.prov.Leases.Put(l); err != nil {
		t.Fatal(err)
	}
	return l
}

// voucher seals the renter's cumulative voucher seq covering until.
func (r *room) voucher(t *testing.T, l *store.Lease, seq uint64, until time.Time) []byte {
	t.Helper()
	raw, err := attest.SealVoucher(&attest.Voucher{
		V: attest.RecordsVersion, Lease: l.ID, Renter: l.Renter, Provider: l.Provider, Seq: seq,
		AmountMicro: seq * 10_000, CoveredUntilMs: until.UnixMilli(), IssuedMs: r.prov.Clock.Now().UnixMilli(),
	}, r.renter.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestUnpaidWorkRule drives the stop-unpaid-work rule with the clock: a
// lease is paid while its vouchers keep up, unpaid once the covered time
// falls behind by more than the longer of window and interval plus the
// grace of the lease's terms (not the provider's config: interval 1m,
// window 1m, grace 30s), and paid again when a voucher catches up.
func TestUnpaidWorkRule(t *testing.T) {
	r := newRoom(t, 1)
	terms := auction.DefaultLeaseTerms
	terms.WindowMs, terms.VoucherMs, terms.GraceMs = 120_000, 20_000, 5_000
	allow := 2*time.Minute + 5*time.Second
	start := r.prov.Clock.Now()
	l := r.runningLease(t, start)
	cash := r.p.cashier
	check := func(want bool) {
		t.Helper()
		cur, err := r.prov.Store.GetLease(l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if late, got := cash.unpaid(cur, terms); got != want {
			t.Fatalf("at +%s (late %s): unpaid %v, want %v", r.prov.Clock.Now().Sub(start), late, got, want)
		}
	}
	check(false)
	r.prov.Clock.Advance(allow)
	check(false) // exactly at the allowance: still working
	r.prov.Clock.Advance(time.Millisecond)
	check(true)

	v := r.voucher(t, l, 1, r.prov.Clock.Now())
	if _, err := cash.acceptVoucher(r.renter.ID, l, v); err != nil {
		t.Fatal(err)
	}
	check(false)
	// An older voucher never replaces a newer one.
	if _, err := cash.acceptVoucher(r.renter.ID, l, r.voucher(t, l, 1, start)); err == nil {
		t.Fatal("a voucher that does not supersede the stored one was accepted")
	}
	// A voucher signed by someone else for this lease is refused.
	if _, err := cash.acceptVoucher(r.prov.ID, l, v); err == nil {
		t.Fatal("a voucher delivered by a peer other than the renter was accepted")
	}
	r.prov.Clock.Advance(allow + time.Millisecond)
	check(true)
}

// TestPrepaidIntervalsCountAsPaid: with 2 prepaid intervals a lease is not
// unpaid before two intervals plus the allowance pass.
func TestPrepaidIntervalsCountAsPaid(t *testing.T) {
	r := newRoom(t, 1)
	terms := auction.DefaultLeaseTerms
	terms.Prepay = 2
	start := r.prov.Clock.Now()
	l := r.runningLease(t, start)
	r.prov.Clock.Advance(2*terms.VoucherInterval() + max(terms.VoucherInterval(), terms.Window()) + terms.Grace())
	if _, unpaid := r.p.cashier.unpaid(l, terms); unpaid {
		t.Fatal("unpaid within the prepaid intervals and the allowance")
	}
	r.prov.Clock.Advance(time.Millisecond)
	if _, unpaid := r.p.cashier.unpaid(l, terms); !unpaid {
		t.Fatal("not unpaid past the prepaid intervals and the allowance")
	}
}

// TestReceiptIssuedOncePerLease: the end of a lease and a late final
// voucher both ask for a receipt, concurrently and repeatedly; exactly one
// receipt over the last voucher is stored, and a later voucher gets a new
// one that replaces it on the lease.
func TestReceiptIssuedOncePerLease(t *testing.T) {
	r := newRoom(t, 1)
	start := r.prov.Clock.Now()
	l := r.runningLease(t, start)
	cash := r.p.cashier
	if _, err := cash.acceptVoucher(r.renter.ID, l, r.voucher(t, l, 1, start.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.prov.Leases.Finish(l.ID, lease.Completed, "", func(l *store.Lease) { l.WorkFinishedMs = start.Add(time.Minute).UnixMilli() }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			cur, _ := r.prov.Store.GetLease(l.ID)
			cash.issueReceipt(ctx, cur)
		})
	}
	wg.Wait()
	receipts := func() int {
		t.Helper()
		raws, err := r.prov.Store.ReceiptIDs()
		if err != nil {
			t.Fatal(err)
		}
		return len(raws)
	}
	if n := receipts(); n != 1 {
		t.Fatalf("%d receipts for one lease and one voucher, want 1", n)
	}
	// The renter's final voucher arrives after the end: one more receipt,
	// over the later voucher, now on the lease.
	cur, _ := r.prov.Store.GetLease(l.ID)
	if _, err := cash.acceptVoucher(r.renter.ID, cur, r.voucher(t, cur, 2, start.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	cur, _ = r.prov.Store.GetLease(l.ID)
	cash.issueReceipt(ctx, cur)
	cash.issueReceipt(ctx, cur)
	if n := receipts(); n != 2 {
		t.Fatalf("%d receipts after a later voucher, want 2", n)
	}
	cur, _ = r.prov.Store.GetLease(l.ID)
	_, v, err := attest.OpenReceipt(cur.Receipt)
	if err != nil || v.Seq != 2 {
		t.Fatalf("lease's receipt covers voucher %v (%v), want seq 2", v, err)
	}
}
