package provider

import (
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
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

type gpuSeries struct {
	points []api.GPUPoint
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
	s.points = append(s.points, api.GPUPoint{
		At: s.at.UTC(), UtilPct: s.util / n, PowerW: s.power / n, TempC: s.temp / n, MemUsedMiB: uint64(s.mem / n),
	})
	if len(s.points) > historyPoints {
		s.points = slices.Delete(s.points, 0, len(s.points)-historyPoints)
	}
	s.n, s.util, s.power, s.temp, s.mem = 0, 0, 0, 0, 0
}

// GPUHistory is each GPU's telemetry over the last hour, oldest first,
// with the bucket still filling as the last point.
func (p *Provider) GPUHistory() []api.GPUSeries {
	h := &p.history
	h.mu.Lock()
	defer h.mu.Unlock()
	names := map[string]string{}
	if devs, err := p.gpus.Devices(); err == nil {
		for _, d := range devs {
			names[d.UUID] = d.Name
		}
	}
	out := make([]api.GPUSeries, 0, len(h.gpus))
	for uuid, s := range h.gpus {
		pts := slices.Clone(s.points)
		if s.n > 0 {
			n := float64(s.n)
			pts = append(pts, api.GPUPoint{At: s.at.UTC(), UtilPct: s.util / n, PowerW: s.power / n, TempC: s.temp / n, MemUsedMiB: uint64(s.mem / n)})
		}
		out = append(out, api.GPUSeries{UUID: uuid, Name: names[uuid], Points: pts})
	}
	slices.SortFunc(out, func(a, b api.GPUSeries) int {
		if a.UUID < b.UUID {
			return -1
		}
		return 1
	})
	return out
}
