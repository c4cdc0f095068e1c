package gpu

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestSimSetLoadRejects(t *testing.T) {
	s, _ := newTestSim(t, 1, "t4")
	uuid := uuids(t, s)[0]
	cases := []struct {
		name    string
		uuid    string
		util    float64
		memMiB  uint64
		wantErr error // nil: any error
	}{
		{name: "negative-util", uuid: uuid, util: -1},
		{name: "util-over-100", uuid: uuid, util: 100.5},
		{name: "nan-util", uuid: uuid, util: math.NaN()},
		{name: "memory-over-total", uuid: uuid, util: 10, memMiB: 15361},
		{name: "unknown-device", uuid: "GPU-00000000-0000-0000-0000-000000000000", util: 10, wantErr: ErrUnknownDevice},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.SetLoad(c.uuid, "job", c.util, c.memMiB)
			if err == nil {
				t.Fatal("SetLoad accepted bad input")
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestSimFailGPU(t *testing.T) {
	s, clk := newTestSim(t, 1, "h100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-80gb")
	ids := uuids(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := s.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FailGPU(ids[1]); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.UUID != ids[1] || ev.XID != 79 || !ev.Time.Equal(clk.Now()) {
		t.Fatalf("event %+v, want XID 79 for %s", ev, ids[1])
	}
	clk.Advance(time.Second)
	ss, err := s.Sample(context.Background())
	if !errors.Is(err, ErrGPULost) {
		t.Fatalf("Sample err = %v, want ErrGPULost", err)
	}
	var de *DeviceError
	if !errors.As(err, &de) || de.Index != 1 || de.UUID != ids[1] {
		t.Fatalf("DeviceError = %+v", de)
	}
	if len(ss) != 2 || ss[0].Index != 0 || ss[1].Index != 2 {
		t.Fatalf("healthy samples %+v", ss)
	}
	if devs, err := s.Devices(); !errors.Is(err, ErrGPULost) || len(devs) != 2 {
		t.Fatalf("Devices = %d devices, err %v", len(devs), err)
	}
	if err := s.SetLoad(ids[1], "job", 10, 0); !errors.Is(err, ErrGPULost) {
		t.Fatalf("SetLoad on lost GPU: %v", err)
	}
}

func TestSimXIDAndECC(t *testing.T) {
	s, _ := newTestSim(t, 1, "a100-sxm-80gb", "rtx-4090")
	ids := uuids(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := s.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		do       func() error
		wantXID  uint64 // 0: no event
		wantCorr uint64
		wantUnc  uint64
	}{
		{name: "xid-43", do: func() error { return s.InjectXID(ids[0], 43) }, wantXID: 43},
		{name: "ecc-corrected", do: func() error { return s.InjectECC(ids[0], false) }, wantCorr: 1},
		{name: "ecc-uncorrected", do: func() error { return s.InjectECC(ids[0], true) }, wantXID: 48, wantCorr: 1, wantUnc: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.do(); err != nil {
				t.Fatal(err)
			}
			if c.wantXID != 0 {
				if ev := <-events; ev.XID != c.wantXID || ev.UUID != ids[0] {
					t.Fatalf("event %+v, want XID %d", ev, c.wantXID)
				}
			}
			smp := mustSample(t, s)[0]
			if !smp.Has(MetricECC) || smp.ECCCorrected != c.wantCorr || smp.ECCUncorrected != c.wantUnc {
				t.Fatalf("ECC %d/%d, want %d/%d", smp.ECCCorrected, smp.ECCUncorrected, c.wantCorr, c.wantUnc)
			}
		})
	}
	t.Run("no-ecc-on-rtx-4090", func(t *testing.T) {
		if err := s.InjectECC(ids[1], true); err == nil {
			t.Fatal("InjectECC on a board without ECC succeeded")
		}
		if smp := mustSample(t, s)[1]; smp.Has(MetricECC) {
			t.Fatal("RTX 4090 sample claims ECC counters")
		}
	})
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

func TestSimSpoofAndSwapUUIDs(t *testing.T) {
	s, clk := newTestSim(t, 1, "h100-sxm-80gb", "h100-sxm-80gb")
	ids := uuids(t, s)
	if err := s.SwapUUIDs(ids[0], ids[1]); err != nil {
		t.Fatal(err)
	}
	if got := uuids(t, s); got[0] != ids[1] || got[1] != ids[0] {
		t.Fatalf("after swap Devices reports %v, want %v swapped", got, ids)
	}
	// The real UUID still addresses the real device.
	if err := s.SetLoad(ids[0], "job", 100, 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	ss := mustSample(t, s)
	if ss[0].UUID != ids[1] || ss[0].UtilizationPct < 95 || ss[1].UtilizationPct != 0 {
		t.Fatalf("samples %+v", ss)
	}
	const clone = "GPU-11111111-2222-3333-4444-555555555555"
	if err := s.SetCheat(ids[1], Cheat{SpoofUUID: clone}); err != nil {
		t.Fatal(err)
	}
	if got := mustSample(t, s)[1].UUID; got != clone {
		t.Fatalf("spoofed UUID %q, want %q", got, clone)
	}
	if err := s.SetCheat(ids[1], Cheat{}); err != nil {
		t.Fatal(err)
	}
	if got := mustSample(t, s)[1].UUID; got != ids[1] {
		t.Fatalf("honest UUID %q, want %q", got, ids[1])
	}
}

func TestSimEventsLifecycle(t *testing.T) {
	s, _ := newTestSim(t, 1, "t4")
	ctx, cancel := context.WithCancel(context.Background())
	a, err := s.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, ok := <-a; ok {
		t.Fatal("cancelled subscription delivered an event")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-b; ok {
		t.Fatal("subscription open after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Sample(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sample after Close: %v", err)
	}
	if _, err := s.Events(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Events after Close: %v", err)
	}
}

func TestNewSimRejects(t *testing.T) {
	cases := []struct {
		name string
		cfg  SimConfig
	}{
		{name: "no-profiles", cfg: SimConfig{}},
		{name: "unknown-profile", cfg: SimConfig{Profiles: []string{"h100-sxm-80gb", "voodoo2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if s, err := NewSim(c.cfg, nil); err == nil {
				_ = s.Close()
				t.Fatal("NewSim accepted a bad config")
			}
		})
	}
}
