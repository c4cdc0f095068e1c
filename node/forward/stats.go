package forward

import (
	"slices"
	"sync"
	"time"
)

// Stats are a forwarder's counts and latencies.
type Stats struct {
	// Requests counts requests answered (for HTTP/1.x, one per response).
	Requests uint64 `json:"requests"`
	// Conns counts local connections accepted; Failed those whose tunnel
	// could not be opened; Open those open now.
	Conns  uint64 `json:"conns"`
	Failed uint64 `json:"failed"`
	Open   int    `json:"open"`
	// P50Ms and P95Ms are the request latency quantiles (time to first
	// byte) over the last samples kept.
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	// RatePerSec is requests per second over the last minute.
	RatePerSec float64 `json:"requests_per_sec"`
	BytesIn    int64   `json:"bytes_in"`
	BytesOut   int64   `json:"bytes_out"`
}

// maxSamples bounds the latencies kept for the quantiles.
const maxSamples = 4096

const rateWindow = time.Minute

type sample struct {
	at  time.Time
	lat time.Duration
}

// recorder keeps a forwarder's counts and the last maxSamples latencies.
type recorder struct {
	mu      sync.Mutex
	s       Stats
	samples []sample // ring
	next    int
	started time.Time
}

func newRecorder(now time.Time) *recorder { return &recorder{started: now} }

func (r *recorder) request(at time.Time, lat time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Requests++
	if len(r.samples) < maxSamples {
		r.samples = append(r.samples, sample{at, lat})
		return
	}
	r.samples[r.next] = sample{at, lat}
	r.next = (r.next + 1) % maxSamples
}

func (r *recorder) update(f func(s *Stats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.s)
}

// snapshot computes the quantiles and the rate as of now.
func (r *recorder) snapshot(now time.Time) Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	lats := make([]time.Duration, 0, len(r.samples))
	recent := 0
	for _, x := range r.samples {
		lats = append(lats, x.lat)
		if now.Sub(x.at) <= rateWindow {
			recent++
		}
	}
	slices.Sort(lats)
	s.P50Ms, s.P95Ms = quantileMs(lats, 0.50), quantileMs(lats, 0.95)
	if window := min(rateWindow, now.Sub(r.started)); window > 0 {
		s.RatePerSec = float64(recent) / window.Seconds()
	}
	return s
}

// quantileMs is the nearest-rank quantile of sorted, in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}
