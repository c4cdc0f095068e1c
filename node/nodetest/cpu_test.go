package nodetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestCPUOnlyJobRunsBesideLeasedGPUs: a gpus: 0 WASM job leases cores and
// RAM of the provider's CPU share, not a GPU, so it runs to completion on
// a provider whose only GPU is leased to other work; the capacity record
// shows the share leased while it runs and free again after.
func TestCPUOnlyJobRunsBesideLeasedGPUs(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5, cpuBeside: true}}, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prov := c.ByRole(node.RoleProvider)[0].Node
	gpuJob, err := renter.Renter().Submit([]byte("name: gpu-hog\nmodule: " + nodetest.DemoModule +
		"\ncommand: [\"hang\"]\ngpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 10m\nbid_window: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, gpuJob.ID, lease.JobRunning)
	if err := nodetest.WaitFor(ctx, "the provider's only GPU leased", func() bool {
		cp := prov.Provider().Capacity()
		return cp != nil && len(cp.GPUs) == 1 && cp.FreeGPUs() == 0
	}); err != nil {
		t.Fatal(err)
	}
	share := prov.Provider().Capacity().CPU
	if share == nil || share.Cores == 0 || share.FreeCores != share.Cores {
		t.Fatalf("CPU share before the CPU job: %+v, want an offered, free share", share)
	}

	cpuJob, err := renter.Renter().Submit([]byte("name: cpu-only\nmodule: " + nodetest.DemoModule +
		"\ncommand: [\"print:cpu-ok\", \"hang\"]\ngpus: 0\ncpu: 1\nram: 64MiB\nmax_price: 5\nduration: 10m\nbid_window: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, cpuJob.ID, lease.JobRunning)
	if err := nodetest.WaitFor(ctx, "the record to show a core leased", func() bool {
		o := prov.Provider().Capacity().CPU
		return o != nil && o.FreeCores == o.Cores-1 && o.FreeRAMMiB == o.RAMMiB-64
	}); err != nil {
		t.Fatal(err)
	}
	j, err := renter.Store().GetJob(cpuJob.ID)
	if err != nil {
		t.Fatal(err)
	}
	leases := jobLeases(t, renter, j)
	if len(leases) != 1 || len(leases[0].GPUs) != 0 || leases[0].CPUCores != 1 || leases[0].Provider != prov.ID().String() {
		t.Fatalf("CPU job's leases %+v, want one GPU-less lease of 1 core on the provider", leases)
	}
	if g, err := renter.Store().GetJob(gpuJob.ID); err != nil || g.State != lease.JobRunning {
		t.Fatalf("the GPU job is %v (%v), want still running", g, err)
	}
	if _, err := renter.Renter().Cancel(ctx, cpuJob.ID); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the CPU share free again", func() bool {
		o := prov.Provider().Capacity().CPU
		return o != nil && o.FreeCores == o.Cores && o.FreeRAMMiB == o.RAMMiB
	}); err != nil {
		t.Fatal(err)
	}
	if cp := prov.Provider().Capacity(); cp.FreeGPUs() != 0 {
		t.Fatalf("the GPU was freed by the CPU job's end: %+v", cp.GPUs)
	}
	// And one that runs to its end, beside the GPU job still.
	done, err := renter.Renter().Submit([]byte("name: cpu-done\nmodule: " + nodetest.DemoModule +
		"\ncommand: [\"print:cpu-ok\"]\ngpus: 0\nmax_price: 5\nduration: 1m\nbid_window: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, ctx, renter, done.ID, lease.JobCompleted, lease.JobFailed); j.State != lease.JobCompleted {
		t.Fatalf("CPU job %s: %s", j.State, j.Reason)
	}
}

// TestCPUOnlyLeaseIsPaidByTime: a CPU-only lease has no GPU telemetry, so
// the renter pays it by the voucher interval; the provider keeps running
// it well past the grace after which unpaid work stops.
func TestCPUOnlyLeaseIsPaidByTime(t *testing.T) {
	_, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5, cpuBeside: true}}, nodetest.Options{Configure: fastAttest})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit([]byte("name: cpu-paid\nmodule: " + nodetest.DemoModule +
		"\ncommand: [\"hang\"]\ngpus: 0\nmax_price: 5\nduration: 10m\nbid_window: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobRunning)
	var paid []uint64
	// Grace is 750 ms past a 250 ms interval: unpaid work would stop
	// after about a second; several vouchers later it still runs.
	if err := nodetest.WaitFor(ctx, "four growing vouchers", func() bool {
		l, err := renter.Store().GetLease(j.Leases[0])
		if err != nil || l.State != lease.Running {
			return false
		}
		if len(paid) == 0 || l.PaidMicro > paid[len(paid)-1] {
			paid = append(paid, l.PaidMicro)
		}
		return len(paid) >= 5 && paid[0] < paid[4]
	}); err != nil {
		t.Fatal(err)
	}
	l, err := renter.Store().GetLease(j.Leases[0])
	if err != nil || l.State != lease.Running || len(l.GPUs) != 0 {
		t.Fatalf("lease %+v (%v), want a running CPU-only lease", l, err)
	}
	// Paid by time, not for the host's GPU telemetry, which says nothing
	// of CPU work (and a host without GPUs has none).
	raw, err := renter.Store().Voucher(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := attest.OpenVoucher(raw); err != nil || v.Telemetry != "" || v.AmountMicro == 0 {
		t.Fatalf("voucher %+v (%v), want a time-based one naming no telemetry", v, err)
	}
}
