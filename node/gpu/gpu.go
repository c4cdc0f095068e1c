// Package gpu reads GPU hardware facts, telemetry samples and health events
// through a small Backend interface, so the rest of the node never touches a
// driver directly.
//
// Three backends implement it:
//
//   - nvml: the NVIDIA driver through go-nvml. It needs cgo and Linux; built
//     without them, it reports ErrNoNVML.
//   - sim: seeded, deterministic simulated GPUs with real model specs, coupled
//     physics (utilization, power, energy and temperature move together),
//     fault injection and cheating modes for verifier tests.
//   - none: zero devices, for CPU-only providers and renters.
//
// Open picks one from a Config. "auto" uses NVML when it initializes and
// falls back to none otherwise, so a binary without the driver still runs.
//
// Every quantity carries its unit in its name (MemoryMiB, PowerW,
// TemperatureC, EnergyMJ, SMClockMHz) because telemetry ends up in signed
// attestations, where a silent unit mix-up would look like fraud.
package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Backend is the source of GPU facts and telemetry. Implementations are safe
// for concurrent use.
type Backend interface {
	// Name is the backend kind: "nvml", "sim" or "none".
	Name() string
	// Devices returns the static facts of every GPU, ordered by index. On a
	// per-device failure it returns the devices it could read plus an error
	// joining one *DeviceError per failed device.
	Devices() ([]Device, error)
	// Sample reads one Sample per device, ordered by index. Like Devices, it
	// returns the samples it could read plus a joined *DeviceError for each
	// device that failed; errors.Is(err, ErrGPULost) tells a lost GPU.
	Sample(ctx context.Context) ([]Sample, error)
	// Events streams XID events until ctx is done or the backend is closed;
	// then the channel is closed. Each call gets its own channel.
	Events(ctx context.Context) (<-chan Event, error)
	// Close releases the backend and waits for its goroutines. It is
	// idempotent; calls after Close return ErrClosed.
	Close() error
}

// Sentinel errors returned (wrapped) by the backends.
var (
	// ErrNoNVML means the NVML library is missing, failed to initialize, or
	// the binary was built without cgo.
	ErrNoNVML = errors.New("gpu: nvml not available")
	// ErrGPULost means the device stopped responding (NVML
	// ERROR_GPU_IS_LOST, XID 79 "fallen off the bus").
	ErrGPULost = errors.New("gpu: gpu is lost")
	// ErrUnknownDevice means no device has the given UUID.
	ErrUnknownDevice = errors.New("gpu: unknown device")
	// ErrClosed means the backend was closed.
	ErrClosed = errors.New("gpu: backend closed")
)

// DeviceError is a failure of one device inside a multi-device call.
type DeviceError struct {
	Index int
	UUID  string // empty when the UUID could not be read
	Op    string // the operation that failed, e.g. "nvml GetPowerUsage"
	Err   error
}

func (e *DeviceError) Error() string {
	return fmt.Sprintf("gpu %d (%s): %s: %v", e.Index, e.UUID, e.Op, e.Err)
}

func (e *DeviceError) Unwrap() error { return e.Err }

// MIGMode is the current Multi-Instance GPU mode of a device.
type MIGMode int

const (
	MIGUnsupported MIGMode = iota // the device (or driver) has no MIG
	MIGDisabled
	MIGEnabled
)

func (m MIGMode) String() string {
	switch m {
	case MIGDisabled:
		return "disabled"
	case MIGEnabled:
		return "enabled"
	default:
		return "unsupported"
	}
}

// Device holds the static facts of one GPU: what a hardware fingerprint
// records and what a capacity advert is built from.
type Device struct {
	Index          int
	UUID           string // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
	Name           string // model name as NVML reports it, e.g. "NVIDIA H100 80GB HBM3"
	MemoryMiB      uint64 // total framebuffer
	ComputeMajor   int    // CUDA compute capability major (9 for Hopper)
	ComputeMinor   int
	PCIBusID       string // "00000000:18:00.0"; empty when unknown
	PCIDeviceID    uint32 // device<<16 | vendor, e.g. 0x233010DE
	VBIOSVersion   string
	DriverVersion  string // e.g. "550.54.15"
	CUDAVersion    string // highest CUDA version the driver supports, e.g. "12.4"
	PowerLimitW    float64
	MaxSMClockMHz  uint32
	MaxMemClockMHz uint32
	Serial         string // empty on boards without an InfoROM serial
	MIG            MIGMode
}

// Metric names a group of Sample fields, to mark the ones a device does not
// report. A missing metric is not an error: consumer boards have no ECC,
// pre-Volta boards no energy counter.
type Metric uint32

const (
	MetricUtilization Metric = 1 << iota
	MetricMemory
	MetricTemperature
	MetricPower
	MetricEnergy
	MetricClocks
	MetricECC
	MetricThrottle
	MetricProcesses
)

// Sample is one telemetry reading of one device.
type Sample struct {
	Time            time.Time
	Index           int
	UUID            string
	UtilizationPct  float64 // GPU busy time over the driver's sample period, 0-100
	MemoryUsedMiB   uint64
	MemoryTotalMiB  uint64
	TemperatureC    float64
	PowerW          float64
	EnergyMJ        uint64 // cumulative since the driver loaded; monotonic
	SMClockMHz      uint32
	MemClockMHz     uint32
	ECCCorrected    uint64 // volatile count since the driver loaded
	ECCUncorrected  uint64
	ThrottleReasons ThrottleReasons
	Processes       []Process
	// Absent marks metrics the device does not report; their fields are zero.
	Absent Metric
}

// Has reports whether the sample carries metric m.
func (s Sample) Has(m Metric) bool { return s.Absent&m == 0 }

// Process is a compute process running on a device.
type Process struct {
	PID           uint32
	UsedMemoryMiB uint64
}

// Event is an XID error reported by the driver.
type Event struct {
	Time time.Time
	UUID string
	XID  uint64 // 999 means the driver did not know the code
}

// IsApplicationXID reports whether an XID is usually caused by the running
// application (bad kernel, page fault, reset channel) rather than by the
// hardware. The list is the one NVIDIA's k8s-device-plugin ignores for
// health: 13, 31, 43, 45, 68, 109.
func IsApplicationXID(code uint64) bool {
	switch code {
	case 13, 31, 43, 45, 68, 109:
		return true
	}
	return false
}

// ThrottleReasons is the NVML clocks-event (formerly "throttle") bitmask.
// The bit values are NVML's, so the nvml backend passes the mask through.
type ThrottleReasons uint64

const (
	ThrottleGPUIdle      ThrottleReasons = 0x1
	ThrottleAppClocks    ThrottleReasons = 0x2
	ThrottleSWPowerCap   ThrottleReasons = 0x4
	ThrottleHWSlowdown   ThrottleReasons = 0x8
	ThrottleSyncBoost    ThrottleReasons = 0x10
	ThrottleSWThermal    ThrottleReasons = 0x20
	ThrottleHWThermal    ThrottleReasons = 0x40
	ThrottleHWPowerBrake ThrottleReasons = 0x80
	ThrottleDisplayClock ThrottleReasons = 0x100
)

// throttleNames follows nvidia-smi's clocks_event_reasons.* query names.
var throttleNames = []struct {
	bit  ThrottleReasons
	name string
}{
	{ThrottleGPUIdle, "gpu_idle"},
	{ThrottleAppClocks, "applications_clocks_setting"},
	{ThrottleSWPowerCap, "sw_power_cap"},
	{ThrottleHWSlowdown, "hw_slowdown"},
	{ThrottleSyncBoost, "sync_boost"},
	{ThrottleSWThermal, "sw_thermal_slowdown"},
	{ThrottleHWThermal, "hw_thermal_slowdown"},
	{ThrottleHWPowerBrake, "hw_power_brake_slowdown"},
	{ThrottleDisplayClock, "display_clock_setting"},
}

// Names returns the human names of the set bits, in bit order. Unknown bits
// are named "unknown(0x...)" rather than dropped.
func (r ThrottleReasons) Names() []string {
	var names []string
	rest := r
	for _, t := range throttleNames {
		if r&t.bit != 0 {
			names = append(names, t.name)
			rest &^= t.bit
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("unknown(%#x)", uint64(rest)))
	}
	return names
}

func (r ThrottleReasons) String() string {
	if r == 0 {
		return "none"
	}
	return strings.Join(r.Names(), ",")
}
