package nodetest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// fastAttest shortens every attestation period so payment tests run in
// seconds: 20 ms samples, 250 ms windows and voucher intervals, 750 ms
// grace.
func fastAttest(_ int, cfg *node.Config) {
	cfg.Attest.Sample = 20 * time.Millisecond
	cfg.Attest.Window = 250 * time.Millisecond
	cfg.Attest.VoucherInterval = 250 * time.Millisecond
	cfg.Attest.VoucherGrace = 750 * time.Millisecond
}

// simProvider gives provider 1 a simulated A10 the test controls.
func simProvider(sims *[]*gpu.Sim) func(int) gpu.Backend {
	return func(i int) gpu.Backend {
		s, err := gpu.NewSim(gpu.SimConfig{Profiles: []string{"a10"}, Seed: uint64(i)}, nil)
		if err != nil {
			panic(err)
		}
		*sims = append(*sims, s)
		return s
	}
}

func payJob(name, work string) []byte {
	return fmt.Appendf(nil, "name: %s\nmodule: %s\ncommand: [%q]\ngpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 1h\nbid_window: 3s\n",
		name, nodetest.DemoModule, work)
}

func hasEvent(j *store.Job, kind, substr string) bool {
	for _, ev := range j.Events {
		if ev.Kind == kind && strings.Contains(ev.Message, substr) {
			return true
		}
	}
	return false
}

// TestHonestTelemetryIsPaid: honest simulated telemetry passes every
// check, the renter pays for it with cumulative vouchers as windows
// arrive, and the lease ends with a receipt both sides hold: the last
// voucher countersigned with the outcome.
func TestHonestTelemetryIsPaid(t *testing.T) {
	var sims []*gpu.Sim
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{Configure: fastAttest, GPU: simProvider(&sims)})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prov := c.ByRole(node.RoleProvider)[0].Node
	j, err := renter.Renter().Submit(payJob("honest", "sleep:2s"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobFailed)
	if j.State != lease.JobCompleted || hasEvent(j, "payment-stopped", "") {
		for _, ev := range j.Events {
			t.Logf("%s: %s", ev.Kind, ev.Message)
		}
		t.Fatalf("honest job: %s %s", j.State, j.Reason)
	}
	// Both sides settle on the same last voucher and the same receipt
	// (a voucher for the last window can reach the provider after the
	// end; it then re-issues the receipt and the renter fetches that one).
	var l, pl *store.Lease
	if err := nodetest.WaitFor(ctx, "both sides hold the same receipt and amount", func() bool {
		l = jobLeases(t, renter, j)[0]
		ls, _ := prov.Store().Leases()
		if len(ls) != 1 {
			return false
		}
		pl = ls[0]
		return len(l.Receipt) > 0 && string(l.Receipt) == string(pl.Receipt) && l.PaidMicro == pl.PaidMicro
	}); err != nil {
		t.Logf("renter paid %d receipt %d bytes; provider paid %d receipt %d bytes", l.PaidMicro, len(l.Receipt), pl.PaidMicro, len(pl.Receipt))
		t.Fatal(err)
	}
	rc, v, err := attest.OpenReceipt(l.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Outcome != lease.Completed || v.Renter != renter.ID().String() || v.AmountMicro != l.PaidMicro || v.Seq < 2 {
		t.Fatalf("receipt %+v over voucher %+v", rc, v)
	}
	// 2 s at the lease's price for one GPU, paid per verified window: at
	// most the whole run, at least most of it.
	full := l.PriceMicro * 2 / 3600
	if v.AmountMicro > full*2 || v.AmountMicro < full/4 {
		t.Errorf("paid %d uUSD for a 2 s job at %d uUSD/h", v.AmountMicro, l.PriceMicro)
	}
}

// TestRenterStopsPayingProviderStopsWork: a renter that stops signing
// vouchers gets its work stopped once the vouchers are a grace late.
func TestRenterStopsPayingProviderStopsWork(t *testing.T) {
	var sims []*gpu.Sim
	var withhold atomic.Bool
	o := nodetest.Options{Configure: fastAttest, GPU: simProvider(&sims),
		WithholdPayment: func(int) func(string) bool { return func(string) bool { return withhold.Load() } }}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prov := c.ByRole(node.RoleProvider)[0].Node
	j, err := renter.Renter().Submit(payJob("stingy", "sleep:10m"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobRunning)
	if err := nodetest.WaitFor(ctx, "first vouchers paid", func() bool {
		ls, _ := prov.Store().Leases()
		return len(ls) == 1 && ls[0].PaidMicro > 0
	}); err != nil {
		t.Fatal(err)
	}
	withhold.Store(true)
	stoppedAt := time.Now()
	j = waitJob(t, ctx, renter, j.ID, lease.JobFailed, lease.JobCompleted)
	ls, _ := prov.Store().Leases()
	if ls[0].State != lease.Failed || !strings.Contains(ls[0].Reason, "vouchers stopped") {
		t.Fatalf("provider lease %s: %q, want failed for unpaid work", ls[0].State, ls[0].Reason)
	}
	// Not before the grace: paid until at most now, plus interval + grace.
	if took := time.Since(stoppedAt); took < 750*time.Millisecond {
		t.Errorf("work stopped %s after payments stopped, before the grace", took)
	}
	if !strings.Contains(j.Reason, "vouchers stopped") {
		t.Errorf("job reason %q", j.Reason)
	}
}

// TestProviderStopsTelemetryRenterStopsPaying: when the provider's
// telemetry stops reaching the renter, the renter stops paying after the
// grace (and a GPU that falls off the bus fails the health check).
func TestProviderStopsTelemetryRenterStopsPaying(t *testing.T) {
	var sims []*gpu.Sim
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{Configure: fastAttest, GPU: simProvider(&sims)})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prov := c.ByRole(node.RoleProvider)[0].Node
	j, err := renter.Renter().Submit(payJob("silent", "sleep:10m"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobRunning)
	if err := nodetest.WaitFor(ctx, "first vouchers paid", func() bool {
		ls, _ := prov.Store().Leases()
		return len(ls) == 1 && ls[0].PaidMicro > 0
	}); err != nil {
		t.Fatal(err)
	}
	// Cut the provider off: no telemetry arrives any more.
	if err := c.Net.UnlinkPeers(prov.ID(), renter.ID()); err != nil {
		t.Fatal(err)
	}
	_ = c.Net.DisconnectPeers(prov.ID(), renter.ID())
	for _, m := range c.Members {
		if m.Node != prov && m.Node != renter {
			_ = c.Net.UnlinkPeers(prov.ID(), m.Node.ID())
			_ = c.Net.DisconnectPeers(prov.ID(), m.Node.ID())
		}
	}
	if err := nodetest.WaitFor(ctx, "payments stopped for lack of telemetry", func() bool {
		cur, _ := renter.Store().GetJob(j.ID)
		return cur != nil && hasEvent(cur, "payment-stopped", "no telemetry")
	}); err != nil {
		t.Fatal(err)
	}

	// A GPU that falls off the bus is a hardware XID: the health check
	// catches it when the XID lands in a window the GPU still reported in;
	// otherwise the GPU's telemetry just stops. Either way payment stops.
	{
		// A cluster of its own, with a deadline of its own: the first part
		// may have used most of the first one on a loaded machine.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		var sims2 []*gpu.Sim
		_, r2 := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{Configure: fastAttest, GPU: simProvider(&sims2)})
		j, err := r2.Renter().Submit(payJob("lost", "sleep:10m"))
		if err != nil {
			t.Fatal(err)
		}
		waitJob(t, ctx, r2, j.ID, lease.JobRunning)
		devs, _ := sims2[0].Devices()
		if err := sims2[0].FailGPU(devs[0].UUID); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("failed the %q check", attest.CheckHealth)
		if err := nodetest.WaitFor(ctx, "payments stopped by the health check or silence", func() bool {
			cur, _ := r2.Store().GetJob(j.ID)
			// The renter stops paying at the allowance after the start,
			// the provider stops the unpaid work at the same allowance:
			// whichever notices first, no voucher came after the failure.
			return cur != nil && (hasEvent(cur, "payment-stopped", want) || hasEvent(cur, "payment-stopped", "no telemetry") ||
				hasEvent(cur, "lease-failed", "vouchers stopped coming"))
		}); err != nil {
			cur, _ := r2.Store().GetJob(j.ID)
			if cur != nil {
				for _, e := range cur.Events {
					t.Logf("event %s: %s", e.Kind, e.Message)
				}
			}
			t.Fatal(err)
		}
	}
}

// TestCheatingTelemetryIsCaught: each cheating mode of the simulated GPU
// is caught by its named check when the renter verifies the lease's
// telemetry, and the renter stops paying.
func TestCheatingTelemetryIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cheat func(s *gpu.Sim, uuid string) error
		check string
		// before: the device lies from the start (a switch mid-window
		// would show as an energy mismatch in that window first).
		before bool
	}{
		{"energy-mismatch", func(s *gpu.Sim, u string) error { return s.SetCheat(u, gpu.Cheat{EnergyFactor: 2}) }, attest.CheckEnergy, false},
		{"load-without-power", func(s *gpu.Sim, u string) error { return s.SetCheat(u, gpu.Cheat{LoadWithoutPower: true}) }, attest.CheckLoadPower, true},
		{"swapped-uuid", func(s *gpu.Sim, u string) error {
			return s.SetCheat(u, gpu.Cheat{SpoofUUID: "GPU-deadbeef-0000-0000-0000-000000000000"})
		}, attest.CheckFingerprint, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sims []*gpu.Sim
			_, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{Configure: fastAttest, GPU: simProvider(&sims)})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			devs, _ := sims[0].Devices()
			if tc.before {
				if err := tc.cheat(sims[0], devs[0].UUID); err != nil {
					t.Fatal(err)
				}
			}
			j, err := renter.Renter().Submit(payJob("cheat-"+tc.name, "sleep:10m"))
			if err != nil {
				t.Fatal(err)
			}
			waitJob(t, ctx, renter, j.ID, lease.JobRunning)
			if !tc.before {
				if err := tc.cheat(sims[0], devs[0].UUID); err != nil {
					t.Fatal(err)
				}
			}
			want := fmt.Sprintf("failed the %q check", tc.check)
			if err := nodetest.WaitFor(ctx, "payments stopped by "+tc.check, func() bool {
				cur, _ := renter.Store().GetJob(j.ID)
				return cur != nil && hasEvent(cur, "payment-stopped", want)
			}); err != nil {
				cur, _ := renter.Store().GetJob(j.ID)
				for _, ev := range cur.Events {
					t.Logf("%s: %s", ev.Kind, ev.Message)
				}
				t.Fatal(err)
			}
		})
	}
}
