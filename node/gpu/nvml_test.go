//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

const mib = 1 << 20

// newMockServer returns a DGX H100 mock with every call the adapter makes
// stubbed: the mock panics on any func left nil. UUIDs are fixed because the
// mock draws random ones.
func newMockServer(t *testing.T) *server.Server {
	t.Helper()
	srv := dgxh100.New()
	for i, h := range srv.Devices {
		d := h.(*server.Device)
		d.UUID = fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i)
		d.MemoryInfo.Used = uint64(1000+i) * mib
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			p.PciDeviceId = d.Config.PciDeviceId
			for j, c := range fmt.Sprintf("00000000:%02X:00.0", dgxBusNumbers[i]) {
				p.BusId[j] = int8(c)
			}
			return p, nvml.SUCCESS
		}
		d.GetVbiosVersionFunc = func() (string, nvml.Return) { return "96.00.99.00.01", nvml.SUCCESS }
		d.GetSerialFunc = func() (string, nvml.Return) { return fmt.Sprintf("165432100%04d", i), nvml.SUCCESS }
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700_000, nvml.SUCCESS }
		d.GetMaxClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return 1980, nvml.SUCCESS
			}
			return 2619, nvml.SUCCESS
		}
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: 5}, nvml.SUCCESS
		}
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + i), nvml.SUCCESS }
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 123_456, nvml.SUCCESS }
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 987_654_321, nvml.SUCCESS }
		d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return 1755, nvml.SUCCESS
			}
			return 2619, nvml.SUCCESS
		}
		d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
			if t == nvml.MEMORY_ERROR_TYPE_CORRECTED {
				return 7, nvml.SUCCESS
			}
			return 1, nvml.SUCCESS
		}
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
			return nvml.ClocksEventReasonSwPowerCap, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			return []nvml.ProcessInfo{{Pid: uint32(4242 + i), UsedGpuMemory: 2048 * mib}}, nvml.SUCCESS
		}
	}
	return srv
}

func mockDevice(srv *server.Server, i int) *server.Device { return srv.Devices[i].(*server.Device) }

func newTestNVML(t *testing.T, srv *server.Server) *NVML {
	t.Helper()
	n, err := NewNVML(srv, nil)
	if err != nil {
		t.Fatalf("NewNVML: %v", err)
	}
	n.waitMS = 5 // keep Close and cancellation quick in tests
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func TestNVMLDevices(t *testing.T) {
	n := newTestNVML(t, newMockServer(t))
	devs, err := n.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 8 {
		t.Fatalf("%d devices, want 8", len(devs))
	}
	want := Device{
		Index: 2, UUID: "GPU-00000000-0000-0000-0000-000000000002", Name: "NVIDIA H100 80GB HBM3",
		MemoryMiB: 81920, ComputeMajor: 9, ComputeMinor: 0, PCIBusID: "00000000:3A:00.0",
		PCIDeviceID: 0x233010DE, VBIOSVersion: "96.00.99.00.01", DriverVersion: "550.54.15",
		CUDAVersion: "12.4", PowerLimitW: 700, MaxSMClockMHz: 1980, MaxMemClockMHz: 2619,
		Serial: "1654321000002", MIG: MIGDisabled,
	}
	if devs[2] != want {
		t.Fatalf("device 2:\n got %+v\nwant %+v", devs[2], want)
	}
}

func TestNVMLSample(t *testing.T) {
	n := newTestNVML(t, newMockServer(t))
	ss, err := n.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 8 {
		t.Fatalf("%d samples", len(ss))
	}
	s := ss[3]
	if s.Index != 3 || s.UUID != "GPU-00000000-0000-0000-0000-000000000003" || s.Time.IsZero() {
		t.Fatalf("identity %+v", s)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"utilization", s.UtilizationPct, 30.0},
		{"memory-used", s.MemoryUsedMiB, uint64(1003)},
		{"memory-total", s.MemoryTotalMiB, uint64(81920)},
		{"temperature", s.TemperatureC, 43.0},
		{"power", s.PowerW, 123.456},
		{"energy", s.EnergyMJ, uint64(987_654_321)},
		{"sm-clock", s.SMClockMHz, uint32(1755)},
		{"mem-clock", s.MemClockMHz, uint32(2619)},
		{"ecc-corrected", s.ECCCorrected, uint64(7)},
		{"ecc-uncorrected", s.ECCUncorrected, uint64(1)},
		{"throttle", s.ThrottleReasons, ThrottleSWPowerCap},
		{"processes", fmt.Sprint(s.Processes), fmt.Sprint([]Process{{PID: 4245, UsedMemoryMiB: 2048}})},
		{"absent", s.Absent, Metric(0)},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

func TestNVMLInitFailsMakesNoFurtherCalls(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_NO_PERMISSION} {
		t.Run(ret.String(), func(t *testing.T) {
			// Only InitFunc is set: any other call panics, as the real
			// library would crash the process.
			lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
			n, err := NewNVML(lib, nil)
			if err == nil || n != nil {
				t.Fatal("NewNVML succeeded after a failed Init")
			}
			if !errors.Is(err, ErrNoNVML) || !errors.Is(err, ret) {
				t.Fatalf("err = %v, want ErrNoNVML and %v", err, ret)
			}
			if calls := len(lib.InitCalls()); calls != 1 {
				t.Fatalf("Init called %d times", calls)
			}
		})
	}
}

func TestNVMLRealLibraryMissing(t *testing.T) {
	_, err := NewNVML(nvml.New(nvml.WithLibraryPath(missingLib)), nil)
	if !errors.Is(err, ErrNoNVML) || !errors.Is(err, nvml.ERROR_LIBRARY_NOT_FOUND) {
		t.Fatalf("err = %v, want ErrNoNVML and ERROR_LIBRARY_NOT_FOUND", err)
	}
}

func TestNVMLDiscoveryErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*server.Server)
		// wantDevices < 0: NewNVML must fail
		wantDevices int
	}{
		{name: "device-count-fails", wantDevices: -1, setup: func(s *server.Server) {
			s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}},
		{name: "driver-version-fails", wantDevices: -1, setup: func(s *server.Server) {
			s.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
		}},
		{name: "one-handle-lost-is-skipped", wantDevices: 7, setup: func(s *server.Server) {
			s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
				if i == 4 {
					return nil, nvml.ERROR_GPU_IS_LOST
				}
				return s.Devices[i], nvml.SUCCESS
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newMockServer(t)
			c.setup(srv)
			n, err := NewNVML(srv, nil)
			if c.wantDevices < 0 {
				if err == nil {
					t.Fatal("NewNVML succeeded")
				}
				if errors.Is(err, ErrNoNVML) {
					t.Fatal("a broken driver must not look like a missing one")
				}
				if len(srv.ShutdownCalls()) != 1 {
					t.Fatal("Shutdown not called after a failed discovery")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if len(n.devices) != c.wantDevices {
				t.Fatalf("%d devices, want %d", len(n.devices), c.wantDevices)
			}
		})
	}
}

func TestNVMLGPULost(t *testing.T) {
	lost := func(d *server.Device, call string) {
		switch call {
		case "GetUtilizationRates":
			d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST }
		case "GetPowerUsage":
			d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
		case "GetComputeRunningProcesses":
			d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
		}
	}
	for _, call := range []string{"GetUtilizationRates", "GetPowerUsage", "GetComputeRunningProcesses"} {
		t.Run(call, func(t *testing.T) {
			srv := newMockServer(t)
			n := newTestNVML(t, srv)
			lost(mockDevice(srv, 5), call)
			ss, err := n.Sample(context.Background())
			if !errors.Is(err, ErrGPULost) || !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
				t.Fatalf("err = %v, want ErrGPULost", err)
			}
			var de *DeviceError
			if !errors.As(err, &de) || de.Index != 5 || de.Op != "nvml "+call {
				t.Fatalf("DeviceError = %+v", de)
			}
			if len(ss) != 7 {
				t.Fatalf("%d healthy samples, want 7", len(ss))
			}
			for _, s := range ss {
				if s.Index == 5 {
					t.Fatal("lost device sampled")
				}
			}
		})
	}
	t.Run("Devices", func(t *testing.T) {
		srv := newMockServer(t)
		n := newTestNVML(t, srv)
		mockDevice(srv, 0).GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
		devs, err := n.Devices()
		if !errors.Is(err, ErrGPULost) || len(devs) != 7 {
			t.Fatalf("Devices = %d, %v", len(devs), err)
		}
	})
	t.Run("other-error-is-not-lost", func(t *testing.T) {
		srv := newMockServer(t)
		n := newTestNVML(t, srv)
		mockDevice(srv, 1).GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		_, err := n.Sample(context.Background())
		if err == nil || errors.Is(err, ErrGPULost) || !errors.Is(err, nvml.ERROR_UNKNOWN) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNVMLNotSupportedIsAbsent(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(*server.Device)
		absent Metric
		check  func(*testing.T, Device)
	}{
		{name: "energy", absent: MetricEnergy, setup: func(d *server.Device) {
			d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		}},
		{name: "ecc", absent: MetricECC, setup: func(d *server.Device) {
			d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
		}},
		{name: "power", absent: MetricPower, setup: func(d *server.Device) {
			d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		}},
		{name: "processes-no-permission", absent: MetricProcesses, setup: func(d *server.Device) {
			d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NO_PERMISSION }
		}},
		{name: "throttle", absent: MetricThrottle, setup: func(d *server.Device) {
			d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		}},
		{name: "serial", setup: func(d *server.Device) {
			d.GetSerialFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
		}, check: func(t *testing.T, d Device) {
			if d.Serial != "" {
				t.Fatalf("serial %q", d.Serial)
			}
		}},
		{name: "mig", setup: func(d *server.Device) {
			d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
		}, check: func(t *testing.T, d Device) {
			if d.MIG != MIGUnsupported {
				t.Fatalf("MIG %v", d.MIG)
			}
		}},
		{name: "mig-enabled", setup: func(d *server.Device) {
			d.GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
		}, check: func(t *testing.T, d Device) {
			if d.MIG != MIGEnabled {
				t.Fatalf("MIG %v", d.MIG)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newMockServer(t)
			n := newTestNVML(t, srv)
			c.setup(mockDevice(srv, 0))
			ss, err := n.Sample(context.Background())
			if err != nil {
				t.Fatalf("Sample: %v", err)
			}
			if ss[0].Absent != c.absent {
				t.Fatalf("absent = %b, want %b", ss[0].Absent, c.absent)
			}
			if ss[1].Absent != 0 {
				t.Fatalf("other device absent = %b", ss[1].Absent)
			}
			devs, err := n.Devices()
			if err != nil {
				t.Fatalf("Devices: %v", err)
			}
			if c.check != nil {
				c.check(t, devs[0])
			}
		})
	}
}

// TestNVMLSymbolGating: on a driver that lacks newer symbols the adapter must
// not call them (the real library would crash). The mock funcs are set to
// nil, so a call would panic.
func TestNVMLSymbolGating(t *testing.T) {
	srv := newMockServer(t)
	missing := map[string]bool{
		"nvmlDeviceGetTotalEnergyConsumption":    true,
		"nvmlDeviceGetMigMode":                   true,
		"nvmlDeviceGetCurrentClocksEventReasons": true,
		"nvmlEventSetCreate":                     true,
		"nvmlSystemGetCudaDriverVersion":         true,
	}
	srv.LookupSymbolFunc = func(s string) error {
		if missing[s] {
			return fmt.Errorf("undefined symbol %s", s)
		}
		return nil
	}
	srv.SystemGetCudaDriverVersionFunc = nil
	srv.EventSetCreateFunc = nil
	for i := range srv.Devices {
		d := mockDevice(srv, i)
		d.GetTotalEnergyConsumptionFunc = nil
		d.GetMigModeFunc = nil
		d.GetCurrentClocksEventReasonsFunc = nil
		// The pre-R535 name of the clocks-event call is present.
		d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
			return nvml.ClocksThrottleReasonHwThermalSlowdown, nvml.SUCCESS
		}
	}
	n := newTestNVML(t, srv)
	devs, err := n.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if devs[0].MIG != MIGUnsupported || devs[0].CUDAVersion != "" {
		t.Fatalf("device %+v", devs[0])
	}
	ss, err := n.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ss[0].Has(MetricEnergy) || ss[0].ThrottleReasons != ThrottleHWThermal {
		t.Fatalf("sample %+v", ss[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := n.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("event without event support")
	}
}
