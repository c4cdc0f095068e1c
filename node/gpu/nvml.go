//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML is the backend on NVIDIA's management library. It codes against
// nvml.Interface so tests can pass go-nvml's mock servers.
//
// Two go-nvml hazards shape it: any NVML call after a failed Init kills the
// process (undefined symbol, exit 127, not recoverable), and so does calling
// a symbol an older driver lacks. So NewNVML stops at a failed Init, and
// newer symbols are looked up once and gated.
type NVML struct {
	lib    nvml.Interface
	log    *slog.Logger
	now    func() time.Time
	waitMS uint32 // EventSet.Wait timeout; bounds how long Close waits

	sym     nvmlSymbols
	driver  string
	cuda    string
	devices []nvmlDevice

	// mu is read-held by every call into NVML and write-held by Close, so
	// Shutdown never runs under an in-flight call.
	mu     sync.RWMutex
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

var _ Backend = (*NVML)(nil)

type nvmlDevice struct {
	index int
	uuid  string
	h     nvml.Device
}

// nvmlSymbols records which optional entry points the loaded driver has.
type nvmlSymbols struct {
	cudaVersion     bool // nvmlSystemGetCudaDriverVersion (R410+)
	energy          bool // nvmlDeviceGetTotalEnergyConsumption (Volta+ drivers)
	mig             bool // nvmlDeviceGetMigMode (R450+)
	clockEvents     bool // nvmlDeviceGetCurrentClocksEventReasons (R535+)
	throttleReasons bool // the pre-R535 name of the same call
	processes       bool // nvmlDeviceGetComputeRunningProcesses
	events          bool // nvmlEventSetCreate
}

func openNVML(cfg Config, logger *slog.Logger) (Backend, error) {
	var opts []nvml.LibraryOption
	if cfg.NVMLLibraryPath != "" {
		opts = append(opts, nvml.WithLibraryPath(cfg.NVMLLibraryPath))
	}
	n, err := NewNVML(nvml.New(opts...), logger)
	if err != nil {
		return nil, err // not a typed nil inside a non-nil Backend
	}
	return n, nil
}

// NewNVML initializes lib (nil means nvml.New()) and enumerates devices. If
// Init fails it returns an error wrapping ErrNoNVML and the nvml.Return, and
// makes no further NVML call. A nil logger discards logs.
func NewNVML(lib nvml.Interface, logger *slog.Logger) (*NVML, error) {
	logger = orDiscard(logger)
	if lib == nil {
		lib = nvml.New()
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: nvml Init: %w", ErrNoNVML, ret)
	}
	n := &NVML{
		lib:    lib,
		log:    logger,
		now:    time.Now,
		waitMS: 500,
		done:   make(chan struct{}),
	}
	if err := n.discover(); err != nil {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			logger.Warn("gpu: nvml Shutdown after failed discovery", "err", ret)
		}
		return nil, err
	}
	logger.Info("gpu: nvml backend ready", "gpus", len(n.devices), "driver", n.driver, "cuda", n.cuda)
	return n, nil
}

func (n *NVML) discover() error {
	ext := n.lib.Extensions()
	has := func(symbol string) bool { return ext.LookupSymbol(symbol) == nil }
	n.sym = nvmlSymbols{
		cudaVersion:     has("nvmlSystemGetCudaDriverVersion"),
		energy:          has("nvmlDeviceGetTotalEnergyConsumption"),
		mig:             has("nvmlDeviceGetMigMode"),
		clockEvents:     has("nvmlDeviceGetCurrentClocksEventReasons"),
		throttleReasons: has("nvmlDeviceGetCurrentClocksThrottleReasons"),
		processes:       has("nvmlDeviceGetComputeRunningProcesses"),
		events:          has("nvmlEventSetCreate"),
	}

	driver, ret := n.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvml SystemGetDriverVersion: %w", ret)
	}
	n.driver = driver
	if n.sym.cudaVersion {
		v, ret := n.lib.SystemGetCudaDriverVersion()
		if ret == nvml.SUCCESS {
			// 12040 means 12.4.
			n.cuda = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
		}
	}

	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvml DeviceGetCount: %w", ret)
	}
	for i := range count {
		h, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			// One broken GPU must not hide the others; it shows up as a
			// missing device in the fingerprint instead.
			n.log.Error("gpu: nvml skipping device", "op", "DeviceGetHandleByIndex", "index", i, "err", ret)
			continue
		}
		uuid, ret := h.GetUUID()
		if ret != nvml.SUCCESS {
			n.log.Error("gpu: nvml skipping device", "op", "GetUUID", "index", i, "err", ret)
			continue
		}
		n.devices = append(n.devices, nvmlDevice{index: i, uuid: uuid, h: h})
	}
	return nil
}

func (n *NVML) Name() string { return BackendNVML }

// check classifies an NVML return: present on SUCCESS; absent (no error) on
// NOT_SUPPORTED, NO_PERMISSION and FUNCTION_NOT_FOUND; otherwise a
// *DeviceError, wrapping ErrGPULost for ERROR_GPU_IS_LOST.
func check(d nvmlDevice, op string, ret nvml.Return) (bool, error) {
	switch ret {
	case nvml.SUCCESS:
		return true, nil
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NO_PERMISSION, nvml.ERROR_FUNCTION_NOT_FOUND:
		return false, nil
	case nvml.ERROR_GPU_IS_LOST:
		return false, &DeviceError{Index: d.index, UUID: d.uuid, Op: "nvml " + op, Err: fmt.Errorf("%w: %w", ErrGPULost, ret)}
	default:
		return false, &DeviceError{Index: d.index, UUID: d.uuid, Op: "nvml " + op, Err: ret}
	}
}

// Devices reads the static facts of every device afresh, so a changed
// fingerprint (VBIOS update, MIG toggled, power limit lowered) is visible.
func (n *NVML) Devices() ([]Device, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return nil, fmt.Errorf("gpu: nvml devices: %w", ErrClosed)
	}
	out := make([]Device, 0, len(n.devices))
	var errs []error
	for _, d := range n.devices {
		dev, err := n.readDevice(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, dev)
	}
	return out, errors.Join(errs...)
}

func (n *NVML) readDevice(d nvmlDevice) (Device, error) {
	dev := Device{Index: d.index, UUID: d.uuid, DriverVersion: n.driver, CUDAVersion: n.cuda, MIG: MIGUnsupported}
	h := d.h

	name, ret := h.GetName()
	if ok, err := check(d, "GetName", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.Name = name
	}
	mem, ret := h.GetMemoryInfo()
	if ok, err := check(d, "GetMemoryInfo", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.MemoryMiB = mem.Total >> 20
	}
	major, minor, ret := h.GetCudaComputeCapability()
	if ok, err := check(d, "GetCudaComputeCapability", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.ComputeMajor, dev.ComputeMinor = major, minor
	}
	pci, ret := h.GetPciInfo()
	if ok, err := check(d, "GetPciInfo", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.PCIBusID = cString(pci.BusId[:])
		dev.PCIDeviceID = pci.PciDeviceId
	}
	vbios, ret := h.GetVbiosVersion()
	if ok, err := check(d, "GetVbiosVersion", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.VBIOSVersion = vbios
	}
	limit, ret := h.GetEnforcedPowerLimit()
	if ok, err := check(d, "GetEnforcedPowerLimit", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.PowerLimitW = float64(limit) / 1000
	}
	maxSM, ret := h.GetMaxClockInfo(nvml.CLOCK_SM)
	if ok, err := check(d, "GetMaxClockInfo(SM)", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.MaxSMClockMHz = maxSM
	}
	maxMem, ret := h.GetMaxClockInfo(nvml.CLOCK_MEM)
	if ok, err := check(d, "GetMaxClockInfo(MEM)", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.MaxMemClockMHz = maxMem
	}
	serial, ret := h.GetSerial() // consumer boards have no InfoROM serial
	if ok, err := check(d, "GetSerial", ret); err != nil {
		return Device{}, err
	} else if ok {
		dev.Serial = serial
	}
	if n.sym.mig {
		cur, _, ret := h.GetMigMode()
		if ok, err := check(d, "GetMigMode", ret); err != nil {
			return Device{}, err
		} else if ok {
			dev.MIG = MIGDisabled
			if cur == nvml.DEVICE_MIG_ENABLE {
				dev.MIG = MIGEnabled
			}
		}
	}
	return dev, nil
}

// cString converts NVML's NUL-terminated char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// Sample reads every device. A device whose read fails is left out and
// reported as a *DeviceError; the others are still returned.
func (n *NVML) Sample(ctx context.Context) ([]Sample, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return nil, fmt.Errorf("gpu: nvml sample: %w", ErrClosed)
	}
	out := make([]Sample, 0, len(n.devices))
	var errs []error
	for _, d := range n.devices {
		// NVML calls cannot be interrupted; check between devices.
		if err := ctx.Err(); err != nil {
			return out, err
		}
		s, err := n.readSample(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// readSample stops at the first hard error: a lost GPU fails every call, and
// each failing call can take the driver a while.
func (n *NVML) readSample(d nvmlDevice) (Sample, error) {
	h := d.h
	s := Sample{Time: n.now(), Index: d.index, UUID: d.uuid}

	util, ret := h.GetUtilizationRates()
	if ok, err := check(d, "GetUtilizationRates", ret); err != nil {
		return Sample{}, err
	} else if ok {
		s.UtilizationPct = float64(util.Gpu)
	} else {
		s.Absent |= MetricUtilization
	}

	mem, ret := h.GetMemoryInfo()
	if ok, err := check(d, "GetMemoryInfo", ret); err != nil {
		return Sample{}, err
	} else if ok {
		s.MemoryUsedMiB, s.MemoryTotalMiB = mem.Used>>20, mem.Total>>20
	} else {
		s.Absent |= MetricMemory
	}

	// GetTemperature is deprecated in NVML 13 but exported by every driver;
	// its replacement GetTemperatureV needs an R565+ symbol and returns a
	// handler bound to the concrete device type, which mocks cannot stub.
	temp, ret := h.GetTemperature(nvml.TEMPERATURE_GPU)
	if ok, err := check(d, "GetTemperature", ret); err != nil {
		return Sample{}, err
	} else if ok {
		s.TemperatureC = float64(temp)
	} else {
		s.Absent |= MetricTemperature
	}

	mw, ret := h.GetPowerUsage()
	if ok, err := check(d, "GetPowerUsage", ret); err != nil {
		return Sample{}, err
	} else if ok {
		s.PowerW = float64(mw) / 1000
	} else {
		s.Absent |= MetricPower
	}

	s.Absent |= MetricEnergy
	if n.sym.energy {
		mj, ret := h.GetTotalEnergyConsumption()
		if ok, err := check(d, "GetTotalEnergyConsumption", ret); err != nil {
			return Sample{}, err
		} else if ok {
			s.EnergyMJ = mj
			s.Absent &^= MetricEnergy
		}
	}

	sm, ret := h.GetClockInfo(nvml.CLOCK_SM)
	okSM, err := check(d, "GetClockInfo(SM)", ret)
	if err != nil {
		return Sample{}, err
	}
	memClock, ret := h.GetClockInfo(nvml.CLOCK_MEM)
	okMem, err := check(d, "GetClockInfo(MEM)", ret)
	if err != nil {
		return Sample{}, err
	}
	if okSM && okMem {
		s.SMClockMHz, s.MemClockMHz = sm, memClock
	} else {
		s.Absent |= MetricClocks
	}

	// Volatile counters reset with the driver, so their deltas are what a
	// telemetry window reports; aggregate counters are lifetime totals.
	corr, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC)
	okCorr, err := check(d, "GetTotalEccErrors(corrected)", ret)
	if err != nil {
		return Sample{}, err
	}
	unc, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	okUnc, err := check(d, "GetTotalEccErrors(uncorrected)", ret)
	if err != nil {
		return Sample{}, err
	}
	if okCorr && okUnc {
		s.ECCCorrected, s.ECCUncorrected = corr, unc
	} else {
		s.Absent |= MetricECC
	}

	s.Absent |= MetricThrottle
	var reasons uint64
	ret = nvml.ERROR_NOT_SUPPORTED
	switch {
	case n.sym.clockEvents:
		reasons, ret = h.GetCurrentClocksEventReasons()
	case n.sym.throttleReasons:
		reasons, ret = h.GetCurrentClocksThrottleReasons()
	}
	if ok, err := check(d, "GetCurrentClocksEventReasons", ret); err != nil {
		return Sample{}, err
	} else if ok {
		s.ThrottleReasons = ThrottleReasons(reasons)
		s.Absent &^= MetricThrottle
	}

	s.Absent |= MetricProcesses
	if n.sym.processes {
		procs, ret := h.GetComputeRunningProcesses()
		if ok, err := check(d, "GetComputeRunningProcesses", ret); err != nil {
			return Sample{}, err
		} else if ok {
			s.Absent &^= MetricProcesses
			for _, p := range procs {
				used := p.UsedGpuMemory
				if used == math.MaxUint64 { // NVML_VALUE_NOT_AVAILABLE
					used = 0
				}
				s.Processes = append(s.Processes, Process{PID: p.Pid, UsedMemoryMiB: used >> 20})
			}
		}
	}
	return s, nil
}

// Close stops event watchers, waits for them and shuts NVML down.
func (n *NVML) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	close(n.done)
	n.mu.Unlock()
	n.wg.Wait()
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvml Shutdown: %w", ret)
	}
	return nil
}
