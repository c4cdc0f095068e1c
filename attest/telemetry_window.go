package attest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrWindow: a sample, XID or lease assignment does not fit the telemetry
// window it is added to.
var ErrWindow = errors.New("telemetry window")

// GPUSample is one reading of one GPU, in the integer units of [Telemetry].
// The node converts its driver readings (node/gpu.Sample) into these; this
// package knows nothing of drivers.
type GPUSample struct {
	UUID       string
	AtMs       int64
	UtilBP     uint32 // utilization in basis points: percent × 100, 0..10000
	MemUsedMiB uint64
	TempC      uint32
	PowerMW    uint64
	// EnergyMJ, ECCCorrected and ECCUncorrected are the driver's cumulative
	// counters (since the driver loaded), not deltas.
	EnergyMJ       uint64
	ECCCorrected   uint64
	ECCUncorrected uint64
	Throttle       uint64 // NVML clocks-event reason bits
}

// TelemetryWindow aggregates samples over one window into a [Telemetry]
// body. It is not safe for concurrent use. A window names one lease per
// GPU: when a GPU's lease changes, close the window and open the next.
type TelemetryWindow struct {
	startMs     int64
	fingerprint string
	gpus        map[string]*gpuAgg
}

type gpuAgg struct {
	n                 uint32
	utilSum           uint64
	powerSum          uint64
	last              GPUSample
	energyMJ          uint64
	energyMs          uint64
	eccCorr, eccUncor uint64
	out               GPUTelemetry
}

// NewTelemetryWindow opens a window starting at startMs. fingerprint is the
// record ID of the current fingerprint entry, or "" to let Chain.Append
// fill it in.
func NewTelemetryWindow(startMs int64, fingerprint string) *TelemetryWindow {
	return &TelemetryWindow{startMs: startMs, fingerprint: fingerprint, gpus: map[string]*gpuAgg{}}
}

func (w *TelemetryWindow) gpu(uuid string) *gpuAgg {
	g := w.gpus[uuid]
	if g == nil {
		g = &gpuAgg{out: GPUTelemetry{UUID: uuid}}
		w.gpus[uuid] = g
	}
	return g
}

// Assign records that lease (of renter) runs on the GPU in this window;
// lease "" means idle. It fails if the GPU is already assigned to another
// lease in this window.
func (w *TelemetryWindow) Assign(uuid, lease, renter string) error {
	g := w.gpu(uuid)
	if (g.out.Lease != "" || g.out.Renter != "") && (g.out.Lease != lease || g.out.Renter != renter) {
		return fmt.Errorf("attest.TelemetryWindow.Assign %s: %w: already assigned to lease %q; close the window first",
			uuid, ErrWindow, g.out.Lease)
	}
	g.out.Lease, g.out.Renter = lease, renter
	return nil
}

// Add accumulates one sample. Samples of one GPU must come in time order,
// at or after the window's start.
func (w *TelemetryWindow) Add(s GPUSample) error {
	if s.AtMs < w.startMs {
		return fmt.Errorf("attest.TelemetryWindow.Add %s: %w: sample at %d before window start %d", s.UUID, ErrWindow, s.AtMs, w.startMs)
	}
	g := w.gpu(s.UUID)
	if g.n > 0 {
		prev := g.last
		if s.AtMs < prev.AtMs {
			return fmt.Errorf("attest.TelemetryWindow.Add %s: %w: sample at %d before the previous one at %d", s.UUID, ErrWindow, s.AtMs, prev.AtMs)
		}
		if s.EnergyMJ >= prev.EnergyMJ {
			g.energyMJ += s.EnergyMJ - prev.EnergyMJ
			g.energyMs += uint64(s.AtMs - prev.AtMs)
		} else {
			// The counter restarted (driver reload): the energy used across
			// the reset is unknown, so leave that interval out and say so.
			g.out.EnergyReset = true
		}
		g.eccCorr += counterDelta(prev.ECCCorrected, s.ECCCorrected)
		g.eccUncor += counterDelta(prev.ECCUncorrected, s.ECCUncorrected)
	}
	o := &g.out
	if g.n == 0 || s.UtilBP < o.UtilMinBP {
		o.UtilMinBP = s.UtilBP
	}
	o.UtilMaxBP = max(o.UtilMaxBP, s.UtilBP)
	o.MemUsedMaxMiB = max(o.MemUsedMaxMiB, s.MemUsedMiB)
	o.TempMaxC = max(o.TempMaxC, s.TempC)
	o.PowerMaxMW = max(o.PowerMaxMW, s.PowerMW)
	o.Throttle |= s.Throttle
	g.utilSum += uint64(s.UtilBP)
	g.powerSum += s.PowerMW
	g.n++
	g.last = s
	return nil
}

// counterDelta is the increase of a cumulative counter between two
// readings; a counter that went backwards restarted from zero, so
// everything it now shows is new.
func counterDelta(prev, cur uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	return cur
}

// AddXID records an XID event on the GPU.
func (w *TelemetryWindow) AddXID(uuid string, atMs int64, code uint64) {
	o := &w.gpu(uuid).out
	if len(o.XIDs) < MaxXIDsPerGPU {
		o.XIDs = append(o.XIDs, XID{Code: code, AtMs: atMs})
	} else {
		o.XIDOverflow++
	}
}

// Close ends the window at endMs and returns its Telemetry body, GPUs
// sorted by UUID. Every GPU mentioned (by a sample, XID or assignment)
// needs at least one sample.
func (w *TelemetryWindow) Close(endMs int64) (*Telemetry, error) {
	t := &Telemetry{StartMs: w.startMs, EndMs: endMs, Fingerprint: w.fingerprint}
	for uuid, g := range w.gpus {
		if g.n == 0 {
			return nil, fmt.Errorf("attest.TelemetryWindow.Close: %w: GPU %s has no samples", ErrWindow, uuid)
		}
		if g.last.AtMs > endMs {
			return nil, fmt.Errorf("attest.TelemetryWindow.Close: %w: GPU %s has a sample at %d after the end %d", ErrWindow, uuid, g.last.AtMs, endMs)
		}
		o := g.out
		o.Samples = g.n
		o.UtilAvgBP = uint32((g.utilSum + uint64(g.n)/2) / uint64(g.n))
		o.PowerAvgMW = (g.powerSum + uint64(g.n)/2) / uint64(g.n)
		o.EnergyMJ, o.EnergyMs = g.energyMJ, g.energyMs
		o.ECCCorrected, o.ECCUncorrected = g.eccCorr, g.eccUncor
		t.GPUs = append(t.GPUs, o)
	}
	if len(t.GPUs) == 0 {
		return nil, fmt.Errorf("attest.TelemetryWindow.Close: %w: no samples", ErrWindow)
	}
	slices.SortFunc(t.GPUs, func(a, b GPUTelemetry) int { return strings.Compare(a.UUID, b.UUID) })
	return t, nil
}
