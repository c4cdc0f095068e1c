package main_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/failpoint"
)

// TestKill9AtPaymentPointsConverges kills -9 a daemon at exact points of
// a paid lease (failpoint.Env arms them) and restarts it: afterwards both
// sides hold the same receipt over the same last voucher and the same paid
// amount, and across every lease the renter's spend equals the provider's
// earnings.
//
//   - the renter, right after storing its first voucher, before sending it;
//   - the renter, after storing its third voucher, before sending it;
//   - the provider, after storing the third voucher, before acknowledging
//     it (the WASM lease then fails with the restart);
//   - the provider, after recording the lease's end, before its receipt.
func TestKill9AtPaymentPointsConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	d := startTrustNet(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name   string
		victim *proc
		point  string
		n      int    // the job's matrix size: its length
		want   string // the job's end
	}{
		{"renter before sending its first voucher", d.renter, failpoint.RenterVoucherStored + ":1", 512, "completed"},
		{"renter before sending a voucher", d.renter, failpoint.RenterVoucherStored + ":3", 512, "completed"},
		{"provider before acknowledging a voucher", d.provider, failpoint.ProviderVoucherStored + ":3", 512, "failed"},
		{"provider between the end and the receipt", d.provider, failpoint.ProviderLeaseEnded, 256, "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.victim
			v.stop()
			v.env = []string{failpoint.Env + "=" + tc.point}
			v.start(t, d.bin)
			v.env = nil
			waitAllConnected(t, ctx, d.all)
			d.waitOffer(t, ctx)
			id := d.submit(t, "crash-"+tc.point, tc.n)
			waitExit(t, ctx, v, "the failpoint "+tc.point+" to kill "+v.name)
			v.start(t, d.bin)
			j := d.waitJob(t, ctx, id)
			if j.State != tc.want {
				t.Fatalf("job %s (%s), want %s", j.State, j.Reason, tc.want)
			}
			rl, pl := d.waitReceipts(t, ctx, id)
			t.Logf("job %s; both sides paid $%.6f, receipt %s", j.State, rl.PaidUSD, pl.ReceiptCID)
		})
		if t.Failed() {
			return
		}
	}
	// Every voucher the renter counts, the provider holds.
	var spend, earned float64
	waitFor(t, ctx, "spend to equal earnings", d.all, func() (bool, string) {
		spend, earned = d.spend(t), d.earnings(t)
		return math.Abs(spend-earned) < 1e-9, fmt.Sprintf("spend $%.6f, earnings $%.6f", spend, earned)
	})
	t.Logf("spend $%.6f = earnings $%.6f over the four leases", spend, earned)
	// Restarts are not abuse: no node holds anything against another
	// (a restarted node once made gossipsub penalise the honest peers that
	// relayed its own earlier messages back to it, until they were banned).
	for _, p := range d.all {
		peers, err := p.client.Peers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range peers {
			if q.Graylisted || q.Banned || q.AbusePoints > 0 || q.GossipScore < -500 {
				t.Errorf("%s holds %s: score %.1f, abuse %.1f (%s), graylisted %v, banned %v",
					p.name, q.ID, q.GossipScore, q.AbusePoints, q.LastAbuse, q.Graylisted, q.Banned)
			}
		}
	}
}

// waitExit waits until p's process has ended by itself.
func waitExit(t *testing.T, ctx context.Context, p *proc, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}
