package main_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeadProviderLeaseFailsAndWorkMoves kills -9 the provider of a
// running WASM lease and does not restart it. With the renter's default
// market settings (provider_timeout 10 s, reauction on) the renter fails
// the lease as unreachable, re-auctions the work, the spare provider wins
// it and the job completes there. The times from the kill to each step are
// logged, for docs/benchmarks.md; the test asserts the outcome, not the
// speed.
func TestDeadProviderLeaseFailsAndWorkMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	d := startTrustNet(t, true)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	// n=768: some 15 s of work, so the lease is killed mid-run.
	id := d.submit(t, "dead-provider", 768)
	waitFor(t, ctx, "the provider to run the job and accept a voucher", d.all, func() (bool, string) {
		l, err := d.lease(ctx, d.provider, id)
		if err != nil {
			return false, err.Error()
		}
		return l.State == "running" && l.PaidUSD > 0, fmt.Sprintf("provider's lease %s, paid $%.6f", l.State, l.PaidUSD)
	})
	first, err := d.lease(ctx, d.renter, id)
	if err != nil {
		t.Fatal(err)
	}
	d.provider.kill9(t)
	killed := time.Now()

	waitFor(t, ctx, "the renter to fail the dead provider's lease", d.all, func() (bool, string) {
		ls, err := d.renter.client.Leases(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, l := range ls {
			if l.ID == first.ID {
				return l.State == "failed", fmt.Sprintf("renter's lease %s (%s)", l.State, l.Reason)
			}
		}
		return false, "the renter lost the lease"
	})
	failedAfter := time.Since(killed)
	var moved time.Duration
	waitFor(t, ctx, "the work to run on the spare provider", d.all, func() (bool, string) {
		l, err := d.lease(ctx, d.spare, id)
		if err != nil {
			return false, err.Error()
		}
		if moved == 0 && l.State == "running" {
			moved = time.Since(killed)
		}
		return l.State == "running" || l.State == "completed", fmt.Sprintf("spare's lease %s", l.State)
	})
	j := d.waitJob(t, ctx, id)
	if j.State != "completed" {
		t.Fatalf("job %s (%s), want completed on the spare provider", j.State, j.Reason)
	}
	ls, err := d.renter.client.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.ID == first.ID && !strings.Contains(l.Reason, "unreachable") {
			t.Errorf("the dead provider's lease failed with %q, want it named unreachable", l.Reason)
		}
	}
	t.Logf("kill -9 -> renter's lease failed: %v; -> running on the spare provider: %v; job completed %v after the kill",
		failedAfter.Round(100*time.Millisecond), moved.Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
}

// TestRenterRestartedMidAuctionGetsBids kills -9 the renter while its
// auction's bid window is open; the restarted renter resumes the auction,
// gets bids, awards a lease and the job completes.
func TestRenterRestartedMidAuctionGetsBids(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	d := startTrustNet(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	id := d.submitWindow(t, "renter-restart-mid-auction", 64, "20s")
	waitFor(t, ctx, "the RFQ to be published", d.all, func() (bool, string) {
		j, err := d.renter.client.Job(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		return len(j.RFQs) > 0 && j.State == "auctioning", fmt.Sprintf("job %s with %d RFQs", j.State, len(j.RFQs))
	})
	d.renter.kill9(t)
	d.renter.start(t, d.bin)
	j := d.waitJob(t, ctx, id)
	if j.State != "completed" {
		t.Fatalf("job %s (%s), want completed after the renter's restart", j.State, j.Reason)
	}
	rl, err := d.lease(ctx, d.renter, id)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := d.lease(ctx, d.provider, id)
	if err != nil {
		t.Fatal(err)
	}
	if rl.ID != pl.ID || pl.State != "completed" {
		t.Errorf("renter's lease %s %s, provider's %s %s", rl.ID, rl.State, pl.ID, pl.State)
	}
	var rounds []string
	for _, e := range j.Events {
		if e.Kind == "rfq" || e.Kind == "window" {
			rounds = append(rounds, e.Message)
		}
	}
	t.Logf("job completed after the restart; auction history: %s", strings.Join(rounds, " | "))
}
