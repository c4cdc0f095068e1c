package provider

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// TestEarningsPricesCosts: a paid lease on one of two GPUs over a
// two-hour range; every GPU of the backend depreciates for the whole range
// at its model's capital cost, fees come off the revenue.
func TestEarningsPricesCosts(t *testing.T) {
	r := newRoom(t, 2)
	devs, err := r.p.GPUs().Devices()
	if err != nil {
		t.Fatal(err)
	}
	slug := gpu.ModelSlug(devs[0].Name, devs[0].MemoryMiB)
	if err := r.p.SetCosts(costs.Config{FeePct: 10, GPUCapitalUSD: 1, DepreciationYears: 1,
		Models: []costs.ModelCapital{{Model: slug, CapitalUSD: 8760, DepreciationYears: 1}}}); err != nil { // 1 USD per hour
		t.Fatal(err)
	}
	now := r.prov.Clock.Now()
	if err := r.prov.Store.PutLease(&store.Lease{
		ID: "L1", Side: lease.SideProvider, Provider: r.prov.ID.String(), State: lease.Completed,
		GPUs: []string{devs[0].UUID}, PaidMicro: 5_000_000, WorkStartedMs: now.Add(-time.Hour).UnixMilli(),
	}); err != nil {
		t.Fatal(err)
	}
	e, err := r.p.Earnings(now.Add(-2 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("total", e.Total.RevenueUSD, 5)
	near("fees", e.Total.FeesUSD, 0.5)
	near("depreciation", e.Total.DepreciationUSD, 4) // 2 GPUs × 2 h × 1 USD
	near("net", e.Total.NetUSD, 5-0.5-4-e.Total.EnergyUSD)
	if len(e.GPUs) != 2 || e.GPUs[0].Model != slug {
		t.Fatalf("gpus = %+v", e.GPUs)
	}
	for _, g := range e.GPUs {
		near(g.UUID+" depreciation", g.DepreciationUSD, 2)
		if g.UUID == devs[0].UUID {
			near(g.UUID+" earned", g.RevenueUSD, 5)
		}
	}
}

// TestLedgerReadsTheWindowsSince: the ledger finds the telemetry windows
// ending after a date by a binary search over the chain, then reads only
// those, a page at a time; it must find exactly what reading the whole
// chain finds, for dates before, inside and after the chain, across page
// edges and with job events between the windows.
func TestLedgerReadsTheWindowsSince(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	r := newAttestorRoom(t, func() time.Time { return now })
	a, _ := r.openFingerprinted()
	start := now
	for i := range 3 * ledgerPage {
		now = now.Add(time.Duration(1+i%7) * 10 * time.Second)
		r.closeWindowAt(a, now)
	}
	k := newBookkeeper(r.self.String(), func() time.Time { return now }, r.db, r.sim, costs.Config{})
	all, err := r.db.ChainEntries(r.self.String(), 0, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	for _, since := range []time.Time{start.Add(-time.Hour), start, start.Add(time.Minute), start.Add(37 * time.Minute),
		start.Add(3 * time.Hour), now.Add(-time.Second), now, now.Add(time.Hour)} {
		var want []int64
		for _, raw := range all {
			if e, err := attest.OpenEntry(raw); err == nil && e.Telemetry != nil && e.Telemetry.EndMs > since.UnixMilli() {
				want = append(want, e.Telemetry.EndMs)
			}
		}
		var got []int64
		if err := k.telemetrySince(since.UnixMilli(), func(w *attest.Telemetry) {
			if w.EndMs > since.UnixMilli() {
				got = append(got, w.EndMs)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("since %s: %d windows read, want the %d that end after it", since.Sub(start), len(got), len(want))
		}
	}
}
