package provider

import (
	"math"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Earnings is the provider's priced range [Since, Until): renters' paid
// vouchers against the costs of [costs], per local day and per GPU, with
// the fill rate (each line's Utilization).
type Earnings struct {
	Since, Until time.Time
	// FeePct is costs.fee_pct (for floor advice); TimeZone is the zone
	// the days are counted in.
	FeePct   float64
	TimeZone string
	costs.Report
}

// bookkeeper prices the provider's earnings from its store and its own
// signed telemetry, with the [costs] in force (a reload replaces them).
type bookkeeper struct {
	self string
	now  func() time.Time
	db   *store.DB
	gpus gpu.Backend

	mu    sync.Mutex
	costs costs.Config
}

func newBookkeeper(self string, now func() time.Time, db *store.DB, gpus gpu.Backend, c costs.Config) *bookkeeper {
	return &bookkeeper{self: self, now: now, db: db, gpus: gpus, costs: c}
}

// setCosts replaces the [costs] that earnings prices with.
func (k *bookkeeper) setCosts(c costs.Config) error {
	if _, err := costs.NewModel(c); err != nil {
		return err
	}
	k.mu.Lock()
	k.costs = c
	k.mu.Unlock()
	return nil
}

// earnings prices the range [since, now): a lease's pay counts on the day
// it started; the fill rate is GPU-hours that telemetry attributes to
// leases over the GPU-hours it attests at all.
func (k *bookkeeper) earnings(since time.Time) (Earnings, error) {
	k.mu.Lock()
	cc := k.costs
	k.mu.Unlock()
	m, err := costs.NewModel(cc)
	if err != nil {
		return Earnings{}, err
	}
	until := k.now()
	r, err := k.ledger(m, since, until)
	if err != nil {
		return Earnings{}, err
	}
	return Earnings{Since: since, Until: until, FeePct: cc.FeePct, TimeZone: m.Loc.String(), Report: r}, nil
}

// ledger feeds the store's paid leases and the provider's own telemetry
// chain into a costs ledger over [since, until).
func (k *bookkeeper) ledger(m costs.Model, since, until time.Time) (costs.Report, error) {
	devs, _ := k.gpus.Devices() // the GPUs it could read; a failed one still shows by its telemetry
	inv := make([]costs.GPU, 0, len(devs))
	for _, d := range devs {
		inv = append(inv, costs.GPU{UUID: d.UUID, Model: gpu.ModelSlug(d.Name, d.MemoryMiB)})
	}
	l := costs.NewLedger(m, since, until, inv)
	leases, err := k.db.Leases()
	if err != nil {
		return costs.Report{}, err
	}
	for _, ls := range leases {
		if ls.Side != lease.SideProvider || ls.PaidMicro == 0 {
			continue
		}
		l.AddPayment(costs.Payment{At: time.UnixMilli(ls.WorkStartedMs), GPUs: ls.GPUs, USD: float64(ls.PaidMicro) / 1e6})
	}
	raws, err := k.db.ChainEntries(k.self, 0, math.MaxUint64)
	if err != nil {
		return costs.Report{}, err
	}
	for _, raw := range raws {
		e, err := attest.OpenEntry(raw)
		if err != nil || e.Telemetry == nil || e.Telemetry.EndMs <= since.UnixMilli() {
			continue
		}
		l.AddTelemetry(e.Telemetry)
	}
	return l.Report(), nil
}
