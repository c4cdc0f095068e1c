package opsmetrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

func TestMetrics(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	sim, err := gpu.NewSim(gpu.SimConfig{Profiles: []string{"h100-sxm-80gb", "a10"}, Clock: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	devs, _ := sim.Devices()
	p := func(state string, started, finished, paidUntil int64, paid uint64) *store.Lease {
		return &store.Lease{Side: lease.SideProvider, State: state, WorkStartedMs: started, WorkFinishedMs: finished, PaidUntilMs: paidUntil, PaidMicro: paid}
	}
	leases := []*store.Lease{
		p(string(lease.Running), ms(-time.Hour), 0, ms(-5*time.Minute), 10), // vouchers 5 min late
		p(string(lease.Running), ms(-time.Hour), 0, ms(-10*time.Second), 10),
		p(string(lease.Running), ms(-10*time.Second), 0, 0, 0),             // just started
		p(string(lease.Completed), ms(-2*time.Hour), ms(-time.Hour), 0, 0), // ran, never paid
		p(string(lease.Completed), ms(-2*time.Hour), ms(-time.Hour), ms(-time.Hour), 50),
		p(string(lease.Failed), 0, 0, 0, 0),
		{Side: lease.SideRenter, State: string(lease.Running), WorkStartedMs: ms(-time.Hour)},
	}
	reg := prometheus.NewRegistry()
	m, err := New(reg, Deps{
		GPU:       sim,
		Leases:    func() ([]*store.Lease, error) { return leases, nil },
		FreeSpace: func() (uint64, bool, error) { return 100 << 20, true, nil },
		Clock:     func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	// The event stream may not be open yet: inject until one is counted.
	xid := m.xids.WithLabelValues(devs[0].UUID, "79", "false")
	for deadline := time.Now().Add(30 * time.Second); testutil.ToFloat64(xid) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("XID 79 never counted")
		}
		if err := sim.InjectXID(devs[0].UUID, 79); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := `
# HELP idlegrid_provider_leases Provider leases in the store by state.
# TYPE idlegrid_provider_leases gauge
idlegrid_provider_leases{state="completed"} 2
idlegrid_provider_leases{state="failed"} 1
idlegrid_provider_leases{state="running"} 3
# HELP idlegrid_provider_unpaid_leases Provider leases that ran but whose renter's vouchers lag: finished with nothing paid, or running paid up to more than its lease terms' grace ago.
# TYPE idlegrid_provider_unpaid_leases gauge
idlegrid_provider_unpaid_leases 2
# HELP idlegrid_store_low_space 1 while the store's free space is below store.low_space_mib (no bids, no writes).
# TYPE idlegrid_store_low_space gauge
idlegrid_store_low_space 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"idlegrid_provider_leases", "idlegrid_provider_unpaid_leases", "idlegrid_store_low_space"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{
		"idlegrid_gpu_temperature_celsius": 2, "idlegrid_gpu_ecc_uncorrected_errors": 2, "idlegrid_gpu_up": 2,
		"idlegrid_gpu_thermal_throttling": 2, "idlegrid_store_free_bytes": 1,
	} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != n {
			t.Errorf("%s: %d series (%v), want %d", name, got, err, n)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
