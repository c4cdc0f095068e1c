package renter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
)

// TestPreparingProviderIsNotLate: a provider that takes longer than the
// telemetry allowance to start the work (pulling a large image) is not
// "late": telemetry is due an allowance after the lease's `started`
// event, as payments are on the provider's side. It is late once the
// work started and no window follows, or when it never starts within
// auction.PrepareAllowance.
func TestPreparingProviderIsNotLate(t *testing.T) {
	r, me, provs := newRenter(t, 1)
	f := provs[0]
	l := renterLease(t, r, f, 1, 1_000_000)
	late := auction.DefaultLeaseTerms.Allowance()
	newPayer := func() *payer {
		return &payer{d: &r.payments.payerDeps, l: l, provider: f.ID, terms: auction.DefaultLeaseTerms, lastWindow: r.now()}
	}

	py := newPayer()
	me.Clock.Advance(3 * late)
	py.checkLate(late)
	if py.stopped != "" {
		t.Fatalf("stopped while the provider prepares for %s: %s", 3*late, py.stopped)
	}
	chain, err := attest.NewChain(f.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Signed 10 s ago (it took that long to arrive): the allowance counts
	// from the signed start, as the provider's does.
	raw, _, err := chain.Append(me.Clock.Now().Add(-10*time.Second).UnixMilli(), &attest.JobEvent{
		Lease: l.ID, Renter: l.Renter, Job: testModule, Event: attest.JobStarted, GPUs: l.GPUs,
	})
	if err != nil {
		t.Fatal(err)
	}
	py.entry(context.Background(), raw)
	me.Clock.Advance(late - 11*time.Second)
	py.checkLate(late)
	if py.stopped != "" {
		t.Fatalf("stopped %s after the start: %s", late-time.Second, py.stopped)
	}
	me.Clock.Advance(2 * time.Second)
	py.checkLate(late)
	if !strings.Contains(py.stopped, "no telemetry") {
		t.Fatalf("an allowance after the start with no window: stopped %q, want no telemetry", py.stopped)
	}

	py = newPayer()
	me.Clock.Advance(late + auction.PrepareAllowance + time.Second)
	py.checkLate(late)
	if !strings.Contains(py.stopped, "not started") {
		t.Fatalf("never started: stopped %q, want not started", py.stopped)
	}
}
