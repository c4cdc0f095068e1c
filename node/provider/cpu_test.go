package provider

import (
	"log/slog"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/store"
)

func TestCPUPool(t *testing.T) {
	host := auction.Host{CPUCores: 9, RAMMiB: 1000}
	if o := newCPUPool(host, 0, 0.02).offer(); o != nil {
		t.Fatalf("a zero share offers %+v", o)
	}
	p := newCPUPool(host, 0.5, 0.02)
	want := auction.CPUOffer{Cores: 4, RAMMiB: 500, FreeCores: 4, FreeRAMMiB: 500, FloorMicro: 20_000}
	if o := p.offer(); o == nil || *o != want {
		t.Fatalf("offer %+v, want %+v (half of 9 cores rounds down)", o, want)
	}
	if tiny := newCPUPool(auction.Host{CPUCores: 1, RAMMiB: 100}, 0.1, 0.02).offer(); tiny == nil || tiny.Cores != 1 {
		t.Fatalf("a positive share of one core offers %+v, want one core", tiny)
	}
	steps := []struct {
		name  string
		lease string
		res   auction.Resources
		ok    bool
		free  uint32
		freeR uint64
	}{
		{"no cores asked takes one", "a", auction.Resources{RAMMiB: 100}, true, 3, 400},
		{"fits", "b", auction.Resources{CPUCores: 2, RAMMiB: 300}, true, 1, 100},
		{"again for the same lease is a no-op", "b", auction.Resources{CPUCores: 2, RAMMiB: 300}, true, 1, 100},
		{"too much RAM", "c", auction.Resources{CPUCores: 1, RAMMiB: 101}, false, 1, 100},
		{"too many cores", "d", auction.Resources{CPUCores: 2}, false, 1, 100},
		{"the last core", "e", auction.Resources{CPUCores: 1, RAMMiB: 100}, true, 0, 0},
	}
	for _, s := range steps {
		if got := p.take(s.lease, s.res); got != s.ok {
			t.Fatalf("%s: take = %v, want %v", s.name, got, s.ok)
		}
		if o := p.offer(); o.FreeCores != s.free || o.FreeRAMMiB != s.freeR {
			t.Fatalf("%s: free %d cores %d MiB, want %d, %d", s.name, o.FreeCores, o.FreeRAMMiB, s.free, s.freeR)
		}
	}
	if !p.release("b") || p.release("b") {
		t.Fatal("release reports a held lease once")
	}
	if o := p.offer(); o.FreeCores != 2 || o.FreeRAMMiB != 300 {
		t.Fatalf("after release: %+v", o)
	}
	// A restored lease holds its share even past the pool's size.
	p.restore(&store.Lease{ID: "old", CPUCores: 8, RAMMiB: 900})
	if o := p.offer(); o.FreeCores != 0 || o.FreeRAMMiB != 0 {
		t.Fatalf("after restoring an oversized lease: %+v", o)
	}
}

// TestCPUShareOnAHostWithGPUs: a host with GPUs offers no CPU share unless
// provider.cpu_beside_gpus is set; a host without offers the configured
// one.
func TestCPUShareOnAHostWithGPUs(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{Profiles: []string{"a10"}, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name    string
		backend gpu.Backend
		beside  bool
		share   float64
		want    float64
	}{
		{"GPUs, default", sim, false, 0.5, 0},
		{"GPUs, beside set", sim, true, 0.5, 0.5},
		{"no GPU", gpu.NewNone(), false, 0.5, 0.5},
		{"no GPU, no share", gpu.NewNone(), false, 0, 0},
	} {
		if got := cpuShare(OfferConfig{CPUShare: tc.share, CPUBesideGPUs: tc.beside}, tc.backend, log); got != tc.want {
			t.Errorf("%s: share %v, want %v", tc.name, got, tc.want)
		}
	}
}
