package renter

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// renterLease stores the renter's copy of a running lease with provider f.
func renterLease(t *testing.T, r *Renter, f *fakeProvider, gpus int, price uint64) *store.Lease {
	t.Helper()
	start := r.now()
	l := &store.Lease{
		ID: attest.RecordID([]byte("award " + f.ID.String())).String(), Side: lease.SideRenter,
		Renter: r.self.String(), Provider: f.ID.String(), PriceMicro: price, State: lease.Running,
		StartsAtMs: start.UnixMilli(), EndsAtMs: start.Add(time.Hour).UnixMilli(),
	}
	for range gpus {
		l.GPUs = append(l.GPUs, "GPU")
	}
	if err := r.payments.leases.Put(l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestVoucherSchedule drives the payer with the clock: each verified
// window is paid with a cumulative voucher for exactly price x GPUs x
// time since the start; a replayed window pays nothing; a voucher the
// provider refuses is not sent again (the next cumulative voucher covers
// its window); the lease records what was paid.
func TestVoucherSchedule(t *testing.T) {
	r, me, provs := newRenter(t, 1)
	f := provs[0]
	const price = 2_000_000 // $2 per GPU-hour
	l := renterLease(t, r, f, 2, price)
	start := time.UnixMilli(l.StartsAtMs)
	py := &payer{d: &r.payments.payerDeps, l: l, provider: f.ID, lastWindow: r.now()}
	ctx := context.Background()

	me.Clock.Advance(time.Minute)
	py.pay(ctx, start.Add(time.Minute), "")
	py.pay(ctx, start.Add(time.Minute), "") // the same window again
	py.pay(ctx, start.Add(30*time.Second), "")
	f.mu.Lock()
	got := len(f.vouchers)
	f.mu.Unlock()
	if got != 1 {
		t.Fatalf("%d vouchers for one window, want 1", got)
	}

	// The provider refuses one voucher: the next one, cumulative, pays for
	// both windows.
	f.mu.Lock()
	f.refuse = true
	f.mu.Unlock()
	me.Clock.Advance(time.Minute)
	py.pay(ctx, start.Add(2*time.Minute), "")
	f.mu.Lock()
	f.refuse = false
	f.mu.Unlock()
	me.Clock.Advance(time.Minute)
	py.pay(ctx, start.Add(3*time.Minute), "")

	f.mu.Lock()
	vs := append([]*attest.Voucher(nil), f.vouchers...)
	f.mu.Unlock()
	want := []struct {
		seq    uint64
		amount uint64
	}{{1, 2 * price / 60}, {3, 2 * price * 3 / 60}}
	if len(vs) != len(want) {
		t.Fatalf("provider holds %d vouchers, want %d (the refused one is superseded)", len(vs), len(want))
	}
	for i, w := range want {
		if vs[i].Seq != w.seq || vs[i].AmountMicro != w.amount {
			t.Fatalf("voucher %d: seq %d for %d µUSD, want seq %d for %d", i, vs[i].Seq, vs[i].AmountMicro, w.seq, w.amount)
		}
	}
	cur, err := r.db.GetLease(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.PaidMicro != want[1].amount || cur.PaidUntilMs != start.Add(3*time.Minute).UnixMilli() {
		t.Fatalf("lease paid %d until %d, want %d until %d", cur.PaidMicro, cur.PaidUntilMs, want[1].amount, start.Add(3*time.Minute).UnixMilli())
	}
	stored, err := r.db.Voucher(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := attest.OpenVoucher(stored); err != nil || v.Seq != 3 {
		t.Fatalf("stored voucher %v (%v), want seq 3", v, err)
	}
}

// TestWithheldLeaseIsNotPaid: the payment policy withholds a lease's
// vouchers; nothing is signed or sent.
func TestWithheldLeaseIsNotPaid(t *testing.T) {
	r, me, provs := newRenter(t, 1)
	r.payments.withhold = func(string) bool { return true }
	l := renterLease(t, r, provs[0], 1, 1_000_000)
	py := &payer{d: &r.payments.payerDeps, l: l, provider: provs[0].ID, lastWindow: r.now()}
	me.Clock.Advance(time.Minute)
	py.pay(context.Background(), time.UnixMilli(l.StartsAtMs).Add(time.Minute), "")
	if _, err := r.db.Voucher(l.ID); err == nil {
		t.Fatal("a withheld lease has a voucher")
	}
}

// TestLastVoucherSentAfterTheEnd: a voucher the provider never answered
// (it was killed between the lease's end and its receipt) is sent again
// once the lease has ended, though no window is left to pay: the provider
// takes it and receipts it, and both sides count the same pay.
func TestLastVoucherSentAfterTheEnd(t *testing.T) {
	r, me, provs := newRenter(t, 1)
	f := provs[0]
	l := renterLease(t, r, f, 1, 2_000_000)
	py := &payer{d: &r.payments.payerDeps, l: l, provider: f.ID, lastWindow: r.now()}
	f.mu.Lock()
	f.drop = true
	f.mu.Unlock()
	me.Clock.Advance(time.Minute)
	py.pay(context.Background(), time.UnixMilli(l.StartsAtMs).Add(time.Minute), "")
	if py.undelivered == nil {
		t.Fatal("a voucher the provider never answered counted as delivered")
	}
	f.mu.Lock()
	f.drop = false
	f.mu.Unlock()
	if _, err := r.payments.leases.Update(l.ID, func(s *store.Lease) bool {
		s.State = lease.Completed
		return true
	}); err != nil {
		t.Fatal(err)
	}
	// The provider (this fake) serves no attestation stream: the payer
	// gives up on it after endedTries, having sent the voucher.
	r.payments.payLease(t.Context(), l)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.vouchers) != 1 || f.vouchers[0].Seq != 1 {
		t.Fatalf("the provider holds %d vouchers, want the renter's last (seq 1)", len(f.vouchers))
	}
}
