//go:build cgo && linux

package gpu

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestNVMLSmoke runs against the real driver. It is skipped unless
// IDLEGRID_NVML_SMOKE=1, because CI machines have no GPU:
//
//	IDLEGRID_NVML_SMOKE=1 go test -run TestNVMLSmoke -v ./node/gpu/
func TestNVMLSmoke(t *testing.T) {
	if os.Getenv("IDLEGRID_NVML_SMOKE") != "1" {
		t.Skip("set IDLEGRID_NVML_SMOKE=1 to run against the real NVML")
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := Open(Config{Backend: BackendNVML}, logger)
	if err != nil {
		t.Fatalf("Open(nvml): %v", err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	devs, err := b.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if len(devs) == 0 {
		t.Fatal("no devices")
	}
	limits := map[string]Device{}
	for _, d := range devs {
		t.Logf("device %+v", d)
		if !strings.HasPrefix(d.UUID, "GPU-") || d.Name == "" || d.MemoryMiB == 0 || d.DriverVersion == "" {
			t.Errorf("implausible device %+v", d)
		}
		limits[d.UUID] = d
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events, err := b.Events(ctx)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}

	first, err := b.Sample(ctx)
	if err != nil {
		t.Fatalf("Sample 1: %v", err)
	}
	<-time.After(time.Second) // the brief asks for two real samples 1 s apart
	second, err := b.Sample(ctx)
	if err != nil {
		t.Fatalf("Sample 2: %v", err)
	}
	if len(first) != len(devs) || len(second) != len(devs) {
		t.Fatalf("%d and %d samples for %d devices", len(first), len(second), len(devs))
	}
	for i := range second {
		a, s := first[i], second[i]
		d := limits[s.UUID]
		t.Logf("sample 1 %+v", a)
		t.Logf("sample 2 %+v throttle=%v", s, s.ThrottleReasons)
		if s.UtilizationPct < 0 || s.UtilizationPct > 100 {
			t.Errorf("%s: utilization %v", s.UUID, s.UtilizationPct)
		}
		if s.Has(MetricMemory) && s.MemoryUsedMiB > s.MemoryTotalMiB {
			t.Errorf("%s: memory %d of %d MiB", s.UUID, s.MemoryUsedMiB, s.MemoryTotalMiB)
		}
		if s.Has(MetricTemperature) && (s.TemperatureC <= 0 || s.TemperatureC > 110) {
			t.Errorf("%s: temperature %v C", s.UUID, s.TemperatureC)
		}
		if s.Has(MetricPower) && (s.PowerW <= 0 || (d.PowerLimitW > 0 && s.PowerW > 1.1*d.PowerLimitW)) {
			t.Errorf("%s: power %v W, limit %v W", s.UUID, s.PowerW, d.PowerLimitW)
		}
		if s.Has(MetricEnergy) {
			dE := float64(s.EnergyMJ) - float64(a.EnergyMJ)
			dt := s.Time.Sub(a.Time).Seconds()
			t.Logf("%s: energy delta %.0f mJ over %.2f s = %.1f W (power readings %.1f, %.1f W)",
				s.UUID, dE, dt, dE/1000/dt, a.PowerW, s.PowerW)
			if dE < 0 {
				t.Errorf("%s: energy counter went backwards", s.UUID)
			}
		}
		if s.Has(MetricClocks) && d.MaxSMClockMHz > 0 && s.SMClockMHz > d.MaxSMClockMHz+100 {
			t.Errorf("%s: SM clock %d MHz above max %d", s.UUID, s.SMClockMHz, d.MaxSMClockMHz)
		}
		if !s.Time.After(a.Time) {
			t.Errorf("%s: sample times %v then %v", s.UUID, a.Time, s.Time)
		}
	}
	cancel()
	for ev := range events {
		t.Logf("xid event %+v", ev)
	}
}
