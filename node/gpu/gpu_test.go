package gpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestThrottleReasonNames(t *testing.T) {
	cases := []struct {
		name string
		in   ThrottleReasons
		want []string
	}{
		{name: "none", in: 0, want: nil},
		{name: "idle", in: ThrottleGPUIdle, want: []string{"gpu_idle"}},
		{name: "power-and-thermal", in: ThrottleSWPowerCap | ThrottleHWThermal | ThrottleHWSlowdown,
			want: []string{"sw_power_cap", "hw_slowdown", "hw_thermal_slowdown"}},
		{name: "unknown-bits-kept", in: ThrottleSyncBoost | 0x800, want: []string{"sync_boost", "unknown(0x800)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.in.Names(); !slices.Equal(got, c.want) {
				t.Fatalf("Names() = %v, want %v", got, c.want)
			}
			wantStr := strings.Join(c.want, ",")
			if c.in == 0 {
				wantStr = "none"
			}
			if got := c.in.String(); got != wantStr {
				t.Fatalf("String() = %q, want %q", got, wantStr)
			}
		})
	}
}

func TestIsApplicationXID(t *testing.T) {
	for code, want := range map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true,
		48: false, 63: false, 64: false, 74: false, 79: false, 94: false, 95: false, 999: false} {
		if got := IsApplicationXID(code); got != want {
			t.Errorf("IsApplicationXID(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestDeviceErrorUnwraps(t *testing.T) {
	err := errors.Join(&DeviceError{Index: 3, UUID: "GPU-x", Op: "nvml GetPowerUsage", Err: ErrGPULost})
	var de *DeviceError
	if !errors.Is(err, ErrGPULost) || !errors.As(err, &de) || de.Index != 3 {
		t.Fatalf("err %v does not unwrap to the device error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "gpu 3 (GPU-x): nvml GetPowerUsage") {
		t.Fatalf("message %q", msg)
	}
}

func TestNoneBackend(t *testing.T) {
	b := NewNone()
	if b.Name() != "none" {
		t.Fatalf("Name = %q", b.Name())
	}
	devs, err := b.Devices()
	if err != nil || len(devs) != 0 {
		t.Fatalf("Devices = %v, %v", devs, err)
	}
	ss, err := b.Sample(context.Background())
	if err != nil || len(ss) != 0 {
		t.Fatalf("Sample = %v, %v", ss, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("none delivered an event")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// missingLib is a path no driver lives at, so these tests behave the same
// on GPU machines: go-nvml's dlopen fails inside Init and nothing else runs.
var missingLib = filepath.Join(os.TempDir(), "idlegrid-no-such-dir", "libnvidia-ml.so.1")

func TestOpen(t *testing.T) {
	cases := []struct {
		name     string
		cfg      Config
		wantName string // "" means an error is expected
		wantErr  error
	}{
		{name: "empty-is-auto-without-nvml", cfg: Config{NVMLLibraryPath: missingLib}, wantName: "none"},
		{name: "auto-without-nvml", cfg: Config{Backend: "auto", NVMLLibraryPath: missingLib}, wantName: "none"},
		{name: "nvml-without-nvml", cfg: Config{Backend: "nvml", NVMLLibraryPath: missingLib}, wantErr: ErrNoNVML},
		{name: "none", cfg: Config{Backend: "none"}, wantName: "none"},
		{name: "sim", cfg: Config{Backend: "sim", Sim: SimConfig{Profiles: []string{"t4", "a10"}, Seed: 1}}, wantName: "sim"},
		{name: "sim-without-profiles", cfg: Config{Backend: "sim"}},
		{name: "unknown", cfg: Config{Backend: "cuda"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Open(c.cfg, nil)
			if c.wantName == "" {
				if err == nil {
					_ = b.Close()
					t.Fatalf("Open succeeded with %q", b.Name())
				}
				if c.wantErr != nil && !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer b.Close()
			if b.Name() != c.wantName {
				t.Fatalf("Name = %q, want %q", b.Name(), c.wantName)
			}
		})
	}
}

// TestOpenAutoDefault opens auto with the default library: NVML on a GPU
// machine, none elsewhere. It must never crash the process.
func TestOpenAutoDefault(t *testing.T) {
	b, err := Open(Config{}, nil)
	if err != nil {
		t.Fatalf("Open(auto): %v", err)
	}
	defer b.Close()
	t.Logf("auto picked %q (GOOS=%s)", b.Name(), runtime.GOOS)
	if b.Name() != "nvml" && b.Name() != "none" {
		t.Fatalf("auto picked %q", b.Name())
	}
	if _, err := b.Sample(context.Background()); err != nil {
		t.Fatalf("Sample: %v", err)
	}
}
