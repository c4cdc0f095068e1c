package provider

import (
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/gpu"
)

// TestGPUHistoryBucketsAndBounds: samples are averaged per 10 s bucket,
// the open bucket is the last point, and an hour is the most kept.
func TestGPUHistoryBucketsAndBounds(t *testing.T) {
	var h gpuHistory
	t0 := time.UnixMilli(1_700_000_000_000).Truncate(historyBucket)
	h.add([]gpu.Sample{{Time: t0, UUID: "GPU-a", UtilizationPct: 20, PowerW: 100, TemperatureC: 40, MemoryUsedMiB: 1000}})
	h.add([]gpu.Sample{{Time: t0.Add(time.Second), UUID: "GPU-a", UtilizationPct: 40, PowerW: 200, TemperatureC: 60, MemoryUsedMiB: 3000}})
	h.add([]gpu.Sample{{Time: t0.Add(historyBucket), UUID: "GPU-a", UtilizationPct: 90}})
	s := h.gpus["GPU-a"]
	if len(s.points) != 1 {
		t.Fatalf("%d closed points, want 1", len(s.points))
	}
	if p := s.points[0]; p.UtilPct != 30 || p.PowerW != 150 || p.TempC != 50 || p.MemUsedMiB != 2000 || !p.At.Equal(t0) {
		t.Fatalf("first bucket %+v, want the means of its two samples at %s", p, t0)
	}
	for i := range historyPoints + 50 {
		h.add([]gpu.Sample{{Time: t0.Add(time.Duration(i+2) * historyBucket), UUID: "GPU-a", UtilizationPct: 1}})
	}
	if n := len(h.gpus["GPU-a"].points); n != historyPoints {
		t.Fatalf("%d points kept, want %d (an hour)", n, historyPoints)
	}
}

// TestGPUHistoryFromTheProvider: the provider's view includes the open
// bucket and each GPU's name.
func TestGPUHistoryFromTheProvider(t *testing.T) {
	r := newRoom(t, 2)
	samples, err := r.p.gpus.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r.p.history.add(samples)
	hist := r.p.GPUHistory()
	if len(hist) != 2 {
		t.Fatalf("%d series for 2 GPUs", len(hist))
	}
	for _, s := range hist {
		if len(s.Points) != 1 || s.Name == "" {
			t.Fatalf("series %s (%q): %d points, want the open bucket", s.UUID, s.Name, len(s.Points))
		}
	}
}
