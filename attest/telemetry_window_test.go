package attest

import (
	"errors"
	"testing"
)

func TestTelemetryWindowAggregates(t *testing.T) {
	u := gpuUUID(0)
	w := NewTelemetryWindow(1000, "")
	if err := w.Assign(u, leaseL1, "renter"); err != nil {
		t.Fatal(err)
	}
	samples := []GPUSample{
		{UUID: u, AtMs: 1000, UtilBP: 9000, MemUsedMiB: 10, TempC: 60, PowerMW: 400_000, EnergyMJ: 1_000_000, ECCCorrected: 5, Throttle: 0x4},
		{UUID: u, AtMs: 2000, UtilBP: 10000, MemUsedMiB: 30, TempC: 70, PowerMW: 600_000, EnergyMJ: 1_500_000, ECCCorrected: 7},
		// counter reset (driver reload): the interval across it is dropped
		{UUID: u, AtMs: 3000, UtilBP: 8000, MemUsedMiB: 20, TempC: 65, PowerMW: 500_000, EnergyMJ: 100, ECCCorrected: 1, Throttle: 0x40},
		{UUID: u, AtMs: 4000, UtilBP: 9000, MemUsedMiB: 20, TempC: 66, PowerMW: 500_000, EnergyMJ: 500_100, ECCCorrected: 1},
	}
	for _, s := range samples {
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	w.AddXID(u, 2500, 13)
	tel, err := w.Close(4000)
	if err != nil {
		t.Fatal(err)
	}
	g := tel.GPUs[0]
	want := GPUTelemetry{UUID: u, Samples: 4, UtilMinBP: 8000, UtilAvgBP: 9000, UtilMaxBP: 10000,
		MemUsedMaxMiB: 30, TempMaxC: 70, PowerAvgMW: 500_000, PowerMaxMW: 600_000,
		EnergyMJ: 1_000_000, EnergyMs: 2000, EnergyReset: true, ECCCorrected: 3,
		XIDs: []XID{{Code: 13, AtMs: 2500}}, Throttle: 0x44, Lease: leaseL1, Renter: "renter"}
	if g.UUID != want.UUID || g.Samples != want.Samples || g.UtilMinBP != want.UtilMinBP || g.UtilAvgBP != want.UtilAvgBP ||
		g.UtilMaxBP != want.UtilMaxBP || g.MemUsedMaxMiB != want.MemUsedMaxMiB || g.TempMaxC != want.TempMaxC ||
		g.PowerAvgMW != want.PowerAvgMW || g.PowerMaxMW != want.PowerMaxMW || g.EnergyMJ != want.EnergyMJ ||
		g.EnergyMs != want.EnergyMs || g.EnergyReset != want.EnergyReset || g.ECCCorrected != want.ECCCorrected ||
		len(g.XIDs) != 1 || g.XIDs[0] != want.XIDs[0] || g.Throttle != want.Throttle || g.Lease != want.Lease || g.Renter != want.Renter {
		t.Errorf("aggregate =\n %+v\nwant\n %+v", g, want)
	}
}

func TestTelemetryWindowRefuses(t *testing.T) {
	u := gpuUUID(0)
	w := NewTelemetryWindow(1000, "")
	if err := w.Add(GPUSample{UUID: u, AtMs: 999}); !errors.Is(err, ErrWindow) {
		t.Errorf("sample before start: %v", err)
	}
	if err := w.Add(GPUSample{UUID: u, AtMs: 2000}); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(GPUSample{UUID: u, AtMs: 1500}); !errors.Is(err, ErrWindow) {
		t.Errorf("sample out of order: %v", err)
	}
	if err := w.Assign(u, leaseL1, "r"); err != nil {
		t.Fatal(err)
	}
	if err := w.Assign(u, leaseL2, "r2"); !errors.Is(err, ErrWindow) {
		t.Errorf("second lease in one window: %v", err)
	}
	if _, err := w.Close(1500); !errors.Is(err, ErrWindow) {
		t.Errorf("close before a sample: %v", err)
	}
	w.AddXID(gpuUUID(1), 1200, 79)
	if _, err := w.Close(3000); !errors.Is(err, ErrWindow) {
		t.Errorf("GPU with an XID but no samples: %v", err)
	}
	for i := range MaxXIDsPerGPU + 3 {
		w.AddXID(u, 1000+int64(i), 13)
	}
	if g := w.gpus[u].out; len(g.XIDs) != MaxXIDsPerGPU || g.XIDOverflow != 3 {
		t.Errorf("xids %d overflow %d", len(g.XIDs), g.XIDOverflow)
	}
}
