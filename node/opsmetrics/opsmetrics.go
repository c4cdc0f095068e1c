// Package opsmetrics exports what an operator alerts on: GPU XID events,
// temperature, thermal throttling, uncorrected ECC errors and lost boards
// (from node/gpu), provider leases by state and the unpaid ones (from the
// store), and the store's free disk. Everything but the XID counter is read
// at scrape time, so nothing here runs between scrapes; the XID counter
// follows the backend's event stream in Run. deploy/prometheus/alerts.yml
// holds the rules built on these names.
package opsmetrics

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Deps are where the metrics are read from. Nil fields leave their
// metrics out.
type Deps struct {
	Logger *slog.Logger
	GPU    gpu.Backend
	// Leases lists the store's leases; only the provider side counts.
	Leases func() ([]*store.Lease, error)
	// FreeSpace is store.DB.FreeSpace.
	FreeSpace func() (free uint64, low bool, err error)
	Clock     func() time.Time
}

// Metrics is the collector plus the XID counter.
type Metrics struct {
	d    Deps
	xids *prometheus.CounterVec

	temp, throttle, eccUncorr, up *prometheus.Desc
	leases, unpaid                *prometheus.Desc
	freeBytes, lowSpace           *prometheus.Desc
}

// sampleTimeout bounds one scrape's GPU read: a hung driver must not hang
// Prometheus.
const sampleTimeout = 2 * time.Second

// New registers the metrics on reg.
func New(reg prometheus.Registerer, d Deps) (*Metrics, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	m := &Metrics{
		d: d,
		xids: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "idlegrid", Subsystem: "gpu", Name: "xid_events_total",
			Help: "Driver XID events per GPU and code; application ones (13, 31, 43, 45, 68, 109) have app=\"true\".",
		}, []string{"gpu", "xid", "app"}),
		temp:      desc("idlegrid_gpu_temperature_celsius", "GPU core temperature.", "gpu"),
		throttle:  desc("idlegrid_gpu_thermal_throttling", "1 while the GPU's clocks are held down by a thermal limit (software or hardware).", "gpu"),
		eccUncorr: desc("idlegrid_gpu_ecc_uncorrected_errors", "Uncorrected ECC errors since the driver loaded.", "gpu"),
		up:        desc("idlegrid_gpu_up", "1 when the GPU answered the last sample, 0 when it failed or is lost.", "gpu"),
		leases:    desc("idlegrid_provider_leases", "Provider leases in the store by state.", "state"),
		unpaid:    desc("idlegrid_provider_unpaid_leases", "Provider leases that ran but whose renter's vouchers lag: finished with nothing paid, or running paid up to more than its lease terms' grace ago."),
		freeBytes: desc("idlegrid_store_free_bytes", "Free bytes on the store's filesystem."),
		lowSpace:  desc("idlegrid_store_low_space", "1 while the store's free space is below store.low_space_mib (no bids, no writes)."),
	}
	if err := reg.Register(m.xids); err != nil {
		return nil, err
	}
	if err := reg.Register(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Run counts XID events until ctx ends. It returns only then (a node
// stops when any of its loops returns), even when the backend has no
// event stream.
func (m *Metrics) Run(ctx context.Context) error {
	if m.d.GPU != nil {
		if events, err := m.d.GPU.Events(ctx); err != nil {
			m.d.Logger.Warn("no XID events for metrics", "err", err)
		} else {
			for ev := range events {
				m.xids.WithLabelValues(ev.UUID, strconv.FormatUint(ev.XID, 10), strconv.FormatBool(gpu.IsApplicationXID(ev.XID))).Inc()
			}
		}
	}
	<-ctx.Done()
	return nil
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.temp, m.throttle, m.eccUncorr, m.up, m.leases, m.unpaid, m.freeBytes, m.lowSpace} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	if m.d.GPU != nil {
		m.collectGPUs(gauge, b2f)
	}
	if m.d.Leases != nil {
		if ls, err := m.d.Leases(); err == nil {
			byState, unpaid := m.countLeases(ls)
			for s, n := range byState {
				gauge(m.leases, float64(n), s)
			}
			gauge(m.unpaid, float64(unpaid))
		}
	}
	if m.d.FreeSpace != nil {
		if free, low, err := m.d.FreeSpace(); err == nil {
			gauge(m.freeBytes, float64(free))
			gauge(m.lowSpace, b2f(low))
		}
	}
}

func (m *Metrics) collectGPUs(gauge func(*prometheus.Desc, float64, ...string), b2f func(bool) float64) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	devs, _ := m.d.GPU.Devices()
	samples, _ := m.d.GPU.Sample(ctx)
	seen := map[string]bool{}
	for _, s := range samples {
		seen[s.UUID] = true
		gauge(m.up, 1, s.UUID)
		if s.Has(gpu.MetricTemperature) {
			gauge(m.temp, s.TemperatureC, s.UUID)
		}
		gauge(m.throttle, b2f(s.ThrottleReasons&(gpu.ThrottleSWThermal|gpu.ThrottleHWThermal) != 0), s.UUID)
		gauge(m.eccUncorr, float64(s.ECCUncorrected), s.UUID)
	}
	for _, d := range devs {
		if !seen[d.UUID] {
			gauge(m.up, 0, d.UUID)
		}
	}
}

// countLeases counts provider leases by state, and the unpaid ones.
func (m *Metrics) countLeases(ls []*store.Lease) (map[string]int, int) {
	byState := map[string]int{}
	unpaid := 0
	now := m.d.Clock().UnixMilli()
	for _, l := range ls {
		if l.Side != lease.SideProvider {
			continue
		}
		byState[l.State]++
		switch st := lease.State(l.State); {
		case l.WorkStartedMs == 0:
		case st.Terminal() && l.PaidMicro == 0 && l.WorkFinishedMs > l.WorkStartedMs:
			unpaid++
		case st == lease.Running && now-max(l.PaidUntilMs, l.WorkStartedMs) > lease.Agreed(l).Grace().Milliseconds():
			// Late by more than the grace of the lease's own terms.
			unpaid++
		}
	}
	return byState, unpaid
}
