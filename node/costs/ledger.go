package costs

import (
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// GPU is one GPU of the host's inventory: depreciation runs for it over
// the whole range, whether or not it worked.
type GPU struct {
	UUID  string
	Model string // slug, e.g. "h100-80gb"; picks the capital cost
}

// Payment is what one lease paid (the renter's latest voucher), booked on
// the local day its work started and split evenly over its GPUs.
type Payment struct {
	At   time.Time
	GPUs []string
	USD  float64
}

// Line is the money and hours of a day, a GPU or the whole range.
type Line struct {
	RevenueUSD      float64 `json:"revenue_usd"`
	FeesUSD         float64 `json:"fees_usd"`
	EnergyKWh       float64 `json:"energy_kwh"` // at the wall: (GPUs + host) × PUE
	EnergyUSD       float64 `json:"energy_usd"`
	DepreciationUSD float64 `json:"depreciation_usd"`
	BandwidthUSD    float64 `json:"bandwidth_usd"`
	NetUSD          float64 `json:"net_usd"`
	LeasedGPUHours  float64 `json:"leased_gpu_hours"`
	OfferedGPUHours float64 `json:"offered_gpu_hours"`
	// Utilization is leased GPU-hours over offered GPU-hours.
	Utilization float64 `json:"utilization"`
}

// Day is one local calendar day.
type Day struct {
	Day    string `json:"day"` // YYYY-MM-DD in the tariff's zone
	Leases int    `json:"leases"`
	Line
}

// GPULine is one GPU over the range. Its EnergyUSD splits into its share
// of the host's (HostEnergyUSD), its own while leased (LeasedEnergyUSD) and
// its own while idle (the rest): the rates floor advice is built from.
type GPULine struct {
	UUID            string  `json:"uuid"`
	Model           string  `json:"model,omitempty"`
	HostEnergyUSD   float64 `json:"host_energy_usd"`
	LeasedEnergyUSD float64 `json:"leased_energy_usd"`
	Line
}

// Report is a priced range.
type Report struct {
	Days  []Day     `json:"days"`
	GPUs  []GPULine `json:"gpus"`
	Total Line      `json:"total"`
}

// Ledger prices one range [from, to). Add telemetry windows and payments
// in any order, then read Report. It is not safe for concurrent use.
type Ledger struct {
	m        Model
	from, to time.Time
	days     map[string]*Day
	gpus     map[string]*GPULine
}

// NewLedger opens a ledger over [from, to) for a host with these GPUs.
// Straight-line depreciation and bandwidth accrue over the whole range,
// split per local day by its length (23 or 25 hours on a DST change).
func NewLedger(m Model, from, to time.Time, inventory []GPU) *Ledger {
	l := &Ledger{m: m, from: from, to: to, days: map[string]*Day{}, gpus: map[string]*GPULine{}}
	for _, g := range inventory {
		l.gpu(g.UUID).Model = g.Model
	}
	n := float64(len(inventory))
	m.split(from, to, func(s segment) {
		h := s.end.Sub(s.start).Hours()
		d := l.day(s.day)
		d.BandwidthUSD += m.BandwidthHr * h
		for _, g := range inventory {
			dep := m.CapitalOf(g.Model).PerHour() * h
			d.DepreciationUSD += dep
			gl := l.gpus[g.UUID]
			gl.DepreciationUSD += dep
			gl.BandwidthUSD += m.BandwidthHr * h / n
		}
	})
	return l
}

func (l *Ledger) day(key string) *Day {
	d := l.days[key]
	if d == nil {
		d = &Day{Day: key}
		l.days[key] = d
	}
	return d
}

func (l *Ledger) gpu(uuid string) *GPULine {
	g := l.gpus[uuid]
	if g == nil {
		g = &GPULine{UUID: uuid}
		l.gpus[uuid] = g
	}
	return g
}

// AddPayment books a lease's pay; one outside the range is ignored.
func (l *Ledger) AddPayment(p Payment) {
	if p.At.Before(l.from) || !p.At.Before(l.to) {
		return
	}
	d := l.day(p.At.In(l.m.Loc).Format(time.DateOnly))
	d.Leases++
	d.RevenueUSD += p.USD
	for _, u := range p.GPUs {
		l.gpu(u).RevenueUSD += p.USD / float64(len(p.GPUs))
	}
}

// mJPerKWh converts the counters' millijoules.
const mJPerKWh = 3.6e9

// WindowEnergyMJ is a GPU's energy over a whole window: the counter's
// increase over the part it measured, plus the unmeasured rest (a counter
// reset, the edges before the first and after the last sample) at the
// window's average sampled power.
func WindowEnergyMJ(g attest.GPUTelemetry, windowMs int64) float64 {
	e := float64(g.EnergyMJ)
	if rest := windowMs - int64(g.EnergyMs); rest > 0 {
		e += float64(g.PowerAvgMW) / 1000 * float64(rest) // mW × ms / 1000 = mJ
	}
	return e
}

// AddTelemetry prices one signed telemetry window, clipped to the range.
func (l *Ledger) AddTelemetry(t *attest.Telemetry) {
	winMs := t.EndMs - t.StartMs
	if winMs <= 0 || len(t.GPUs) == 0 {
		return
	}
	start, end := time.UnixMilli(t.StartMs), time.UnixMilli(t.EndMs)
	if start.Before(l.from) {
		start = l.from
	}
	if end.After(l.to) {
		end = l.to
	}
	if !start.Before(end) {
		return
	}
	gpuKWh := make([]float64, len(t.GPUs))
	for i, g := range t.GPUs {
		gpuKWh[i] = WindowEnergyMJ(g, winMs) / mJPerKWh * l.m.PUE
	}
	hostKWhPerHour := l.m.HostIdleW / 1000 * l.m.PUE
	winH := float64(winMs) / float64(time.Hour/time.Millisecond)
	n := float64(len(t.GPUs))
	l.m.split(start, end, func(s segment) {
		h := s.end.Sub(s.start).Hours()
		share := h / winH
		hostKWh := hostKWhPerHour * h
		d := l.day(s.day)
		d.EnergyKWh += hostKWh
		d.EnergyUSD += hostKWh * s.priceKWh
		for i, g := range t.GPUs {
			kwh := gpuKWh[i] * share
			gl := l.gpu(g.UUID)
			d.EnergyKWh += kwh
			d.EnergyUSD += kwh * s.priceKWh
			gl.EnergyKWh += kwh + hostKWh/n
			gl.EnergyUSD += (kwh + hostKWh/n) * s.priceKWh
			gl.HostEnergyUSD += hostKWh / n * s.priceKWh
			d.OfferedGPUHours += h
			gl.OfferedGPUHours += h
			if g.Lease != "" {
				d.LeasedGPUHours += h
				gl.LeasedGPUHours += h
				gl.LeasedEnergyUSD += kwh * s.priceKWh
			}
		}
	})
}

// finish fills the derived fields of a line.
func (l *Ledger) finish(x *Line) {
	x.FeesUSD = x.RevenueUSD * l.m.FeeShare
	x.NetUSD = x.RevenueUSD - x.FeesUSD - x.EnergyUSD - x.DepreciationUSD - x.BandwidthUSD
	if x.OfferedGPUHours > 0 {
		x.Utilization = x.LeasedGPUHours / x.OfferedGPUHours
	}
}

// Report sums the ledger: days in order, GPUs by UUID, and the total
// (summed in day order, so the same ledger always gives the same bits).
func (l *Ledger) Report() Report {
	var r Report
	for _, d := range l.days {
		l.finish(&d.Line)
		r.Days = append(r.Days, *d)
	}
	slices.SortFunc(r.Days, func(a, b Day) int { return strings.Compare(a.Day, b.Day) })
	t := &r.Total
	for _, d := range r.Days {
		t.RevenueUSD += d.RevenueUSD
		t.EnergyKWh += d.EnergyKWh
		t.EnergyUSD += d.EnergyUSD
		t.DepreciationUSD += d.DepreciationUSD
		t.BandwidthUSD += d.BandwidthUSD
		t.LeasedGPUHours += d.LeasedGPUHours
		t.OfferedGPUHours += d.OfferedGPUHours
	}
	l.finish(t)
	for _, g := range l.gpus {
		l.finish(&g.Line)
		r.GPUs = append(r.GPUs, *g)
	}
	slices.SortFunc(r.GPUs, func(a, b GPULine) int { return strings.Compare(a.UUID, b.UUID) })
	return r
}
