package renter

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// settledLease pays a lease twice, the second voucher never reaching the
// provider (it went down between the lease's end and its receipt), and
// ends the lease: what settling starts from.
func settledLease(t *testing.T, r *Renter, f *fakeProvider) *store.Lease {
	t.Helper()
	r.payments.settling = settling{first: time.Millisecond, most: 5 * time.Millisecond, within: time.Hour}
	l := renterLease(t, r, f, 1, 2_000_000)
	py := &payer{d: &r.payments.payerDeps, l: l, provider: f.ID, lastWindow: r.now()}
	start := time.UnixMilli(l.StartsAtMs)
	py.pay(t.Context(), start.Add(time.Minute), "")
	f.mu.Lock()
	f.drop = true
	f.mu.Unlock()
	py.pay(t.Context(), start.Add(2*time.Minute), "")
	f.mu.Lock()
	f.drop = false
	taken := len(f.vouchers)
	f.mu.Unlock()
	if taken != 1 || py.undelivered == nil {
		t.Fatalf("the provider took %d vouchers, want the first only", taken)
	}
	if _, err := r.payments.leases.Update(l.ID, func(s *store.Lease) bool { s.State = lease.Completed; return true }); err != nil {
		t.Fatal(err)
	}
	return l
}

// receiptSeq is the voucher seq the renter's stored receipt of a lease
// covers (0: none).
func receiptSeq(t *testing.T, r *Renter, id string) uint64 {
	t.Helper()
	l, err := r.db.GetLease(id)
	if err != nil {
		t.Fatal(err)
	}
	if l.Receipt == nil {
		return 0
	}
	_, v, err := attest.OpenReceipt(l.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	return v.Seq
}

// TestSettlingOutlastsAProviderRestart: the provider is down for longer
// than the renter once asked (41 requests: about a minute of asks, then
// the renter kept a receipt over a voucher before its last and counted
// more paid than the provider could claim). Settling goes on: it delivers
// the last voucher once the provider is back and stores the receipt over
// it, not the one over the older voucher the provider served first: one
// receipt of the lease in the renter's records.
func TestSettlingOutlastsAProviderRestart(t *testing.T) {
	r, _, provs := newRenter(t, 1)
	f := provs[0]
	l := settledLease(t, r, f)
	f.mu.Lock()
	f.down = 41 // the 21st voucher delivery is lost, the 21st ask answered
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.payments.fetchReceipt(ctx, l)
	if got := receiptSeq(t, r, l.ID); got != 2 {
		t.Fatalf("the renter's receipt covers voucher %d, want its last (2)", got)
	}
	f.mu.Lock()
	receipts := len(f.receipts)
	f.mu.Unlock()
	if receipts != 2 {
		t.Fatalf("the provider sealed %d receipts, want one over each voucher (the first served, not kept)", receipts)
	}
	ids, err := r.db.ReceiptIDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("the renter holds receipts %v (%v), want the last one only", ids, err)
	}
}

// TestSettlingGivesUpOnAProviderThatNeverTakesTheVoucher: a provider that
// refuses the last voucher for good is asked no longer than the settling
// bound; the receipt over the older voucher is kept.
func TestSettlingGivesUpOnAProviderThatNeverTakesTheVoucher(t *testing.T) {
	r, _, provs := newRenter(t, 1)
	f := provs[0]
	l := settledLease(t, r, f)
	r.payments.settling.within = 0
	f.mu.Lock()
	f.refuse = true
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.payments.fetchReceipt(ctx, l)
	if ctx.Err() != nil {
		t.Fatal("settling did not give up")
	}
	if got := receiptSeq(t, r, l.ID); got != 1 {
		t.Fatalf("the renter's receipt covers voucher %d, want the one the provider took (1)", got)
	}
}

// TestRestartedRenterSettlesAgain: a renter restarted while settling
// settles the lease again (its receipt does not cover its last voucher),
// unless the lease ended more than a day ago.
func TestRestartedRenterSettlesAgain(t *testing.T) {
	r, me, provs := newRenter(t, 1)
	f := provs[0]
	l := settledLease(t, r, f)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	now := func(fn func(context.Context)) error { fn(ctx); return nil }
	me.Clock.Advance(settleResumeWithin + time.Minute)
	r.payments.resumeSettling(now)
	if got := receiptSeq(t, r, l.ID); got != 0 {
		t.Fatalf("a lease ended more than a day ago was settled again (receipt over voucher %d)", got)
	}
	if _, err := r.payments.leases.Update(l.ID, func(*store.Lease) bool { return true }); err != nil {
		t.Fatal(err)
	}
	r.payments.resumeSettling(now)
	if got := receiptSeq(t, r, l.ID); got != 2 {
		t.Fatalf("the restarted renter's receipt covers voucher %d, want its last (2)", got)
	}
	f.mu.Lock()
	asked := f.receiptAsks
	f.mu.Unlock()
	r.payments.resumeSettling(now)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.receiptAsks != asked {
		t.Fatal("a settled lease was settled again")
	}
}
