package provider

import (
	"errors"
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
	err = k.telemetrySince(since.UnixMilli(), func(t *attest.Telemetry) {
		if t.EndMs > since.UnixMilli() {
			l.AddTelemetry(t)
		}
	})
	if err != nil {
		return costs.Report{}, err
	}
	return l.Report(), nil
}

// ledgerPage is how many chain entries the ledger decodes at a time.
const ledgerPage = 512

// telemetrySince calls fn with every telemetry window of the provider's
// own chain dated after sinceMs, in chain order. It reads only those, a
// page at a time: the chain grows by 1,440 windows a day at the default
// 1-minute window, so a year of it is half a million entries, gigabytes
// with eight GPUs, which reading whole on every dashboard load would hold
// in memory at once.
func (k *bookkeeper) telemetrySince(sinceMs int64, fn func(*attest.Telemetry)) error {
	raw, err := k.db.ChainHead()
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	head, err := attest.UnmarshalHead(raw)
	if err != nil {
		return err
	}
	// A crash between an entry and its head leaves the head behind: read
	// past it to the last stored entry.
	last := uint64(math.MaxUint64)
	from, err := k.firstSeqAfter(head.Seq, sinceMs)
	if err != nil {
		return err
	}
	for {
		raws, err := k.db.ChainEntries(k.self, from, min(from+ledgerPage-1, last))
		if err != nil {
			return err
		}
		for _, raw := range raws {
			if e, err := attest.OpenEntry(raw); err == nil && e.Telemetry != nil {
				fn(e.Telemetry)
			}
		}
		if len(raws) < ledgerPage || from+ledgerPage < from {
			return nil
		}
		from += ledgerPage
	}
}

// firstSeqAfter is the lowest seq up to head whose entry is dated after
// sinceMs (head+1 when none). Entries are dated in seq order
// (attest.Chain refuses an earlier at_ms), and a telemetry window ends
// at or before its entry's date, so the windows that end after sinceMs
// start there. A binary search: about 20 reads on a year's chain. A seq
// missing from the store is searched past from below.
func (k *bookkeeper) firstSeqAfter(head uint64, sinceMs int64) (uint64, error) {
	lo, hi := uint64(0), head+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		raws, err := k.db.ChainEntries(k.self, mid, mid)
		if err != nil {
			return 0, err
		}
		var e *attest.Entry
		if len(raws) == 1 {
			e, _ = attest.OpenEntry(raws[0])
		}
		if e == nil {
			return lo, nil // cannot tell: read from lo, as before the search
		}
		if e.AtMs > sinceMs {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}
