package provider

import (
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/gpu"
)

// The dashboard's GPU charts keep an hour of telemetry in buckets of ten
// seconds: 360 points a GPU, whatever the sample rate.
const (
	historyBucket = 10 * time.Second
	historyPoints = 360
)

// gpuHistory keeps the attestor's samples, averaged per bucket, for the
// operator's charts. It holds no more than the attested chain does; it
// only keeps it at hand.
type gpuHistory struct {
	mu   sync.Mutex
	gpus map[string]*gpuSeries
}

// GPUPoint is one GPU's mean telemetry over a bucket of samples.
type GPUPoint struct {
	At         time.Time
	UtilPct    float64
	PowerW     float64
	TempC      float64
	MemUsedMiB uint64
}

// GPUSeries is one GPU's recent telemetry, oldest point first.
type GPUSeries struct {
	UUID   string
	Name   string
	Points []GPUPoint
}

type gpuSeries struct {
	points []GPUPoint
	// open accumulates the current bucket.
	at                     time.Time
	n                      int
	util, power, temp, mem float64
}

func (h *gpuHistory) add(samples []gpu.Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gpus == nil {
		h.gpus = map[string]*gpuSeries{}
	}
	for _, s := range samples {
		sr := h.gpus[s.UUID]
		if sr == nil {
			sr = &gpuSeries{}
			h.gpus[s.UUID] = sr
		}
		b := s.Time.Truncate(historyBucket)
		if !b.Equal(sr.at) {
			sr.flush()
			sr.at = b
		}
		sr.n++
		sr.util += s.UtilizationPct
		sr.power += s.PowerW
		sr.temp += s.TemperatureC
		sr.mem += float64(s.MemoryUsedMiB)
	}
}

// flush closes the open bucket into a point.
func (s *gpuSeries) flush() {
	if s.n == 0 {
		return
	}
	n := float64(s.n)
	s.points = append(s.points, GPUPoint{
		At: s.at.UTC(), UtilPct: s.util / n, PowerW: s.power / n, TempC: s.temp / n, MemUsedMiB: uint64(s.mem / n),
	})
	if len(s.points) > historyPoints {
		s.points = slices.Delete(s.points, 0, len(s.points)-historyPoints)
	}
	s.n, s.util, s.power, s.temp, s.mem = 0, 0, 0, 0, 0
}

// series is each GPU's telemetry over the last hour, oldest first, with
// the bucket still filling as the last point, named from gpus' devices.
func (h *gpuHistory) series(gpus gpu.Backend) []GPUSeries {
	names := map[string]string{}
	if devs, err := gpus.Devices(); err == nil {
		for _, d := range devs {
			names[d.UUID] = d.Name
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]GPUSeries, 0, len(h.gpus))
	for uuid, s := range h.gpus {
		pts := slices.Clone(s.points)
		if s.n > 0 {
			n := float64(s.n)
			pts = append(pts, GPUPoint{At: s.at.UTC(), UtilPct: s.util / n, PowerW: s.power / n, TempC: s.temp / n, MemUsedMiB: uint64(s.mem / n)})
		}
		out = append(out, GPUSeries{UUID: uuid, Name: names[uuid], Points: pts})
	}
	slices.SortFunc(out, func(a, b GPUSeries) int {
		if a.UUID < b.UUID {
			return -1
		}
		return 1
	})
	return out
}
