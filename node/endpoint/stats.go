package endpoint

import (
	"slices"
	"sync"
	"time"
)

// Stats are the counts and latencies of one replica or of a whole service.
type Stats struct {
	// Requests counts answers relayed to clients (any status); Errors the
	// attempts that failed before answering (connection, tunnel, or a
	// 502/503/504 status); Broken the answers cut after their first byte;
	// Retries the attempts sent again to another replica.
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	Broken   uint64 `json:"broken"`
	Retries  uint64 `json:"retries,omitempty"`
	InFlight int    `json:"in_flight"`
	// RatePerSec is answers per second over the last minute.
	RatePerSec float64 `json:"requests_per_sec"`
	// P50Ms and P95Ms are the request latency quantiles (request to the
	// answer's last byte); TTFTP50Ms and TTFTP95Ms those of the time to
	// first token (request to the answer's first body byte), over the
	// last samples kept.
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	TTFTP50Ms float64 `json:"ttft_p50_ms"`
	TTFTP95Ms float64 `json:"ttft_p95_ms"`
	// PromptTokens and CompletionTokens sum the usage the answers reported.
	PromptTokens     uint64 `json:"prompt_tokens"`
	CompletionTokens uint64 `json:"completion_tokens"`
}

// Tokens is the tokens served: prompt and completion.
func (s Stats) Tokens() uint64 { return s.PromptTokens + s.CompletionTokens }

// maxSamples bounds the latencies kept for the quantiles.
const maxSamples = 4096

const rateWindow = time.Minute

type sample struct {
	at        time.Time
	lat, ttft time.Duration
}

// recorder keeps counts and the last maxSamples latencies.
type recorder struct {
	mu      sync.Mutex
	s       Stats
	samples []sample // ring
	next    int
}

// answered records an answer relayed whole or cut.
func (r *recorder) answered(at time.Time, lat, ttft time.Duration, u usage, broken bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Requests++
	if broken {
		r.s.Broken++
	}
	r.s.PromptTokens += u.PromptTokens
	r.s.CompletionTokens += u.CompletionTokens
	x := sample{at, lat, ttft}
	if len(r.samples) < maxSamples {
		r.samples = append(r.samples, x)
		return
	}
	r.samples[r.next] = x
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
	ttfts := make([]time.Duration, 0, len(r.samples))
	recent := 0
	for _, x := range r.samples {
		lats, ttfts = append(lats, x.lat), append(ttfts, x.ttft)
		if now.Sub(x.at) <= rateWindow {
			recent++
		}
	}
	slices.Sort(lats)
	slices.Sort(ttfts)
	s.P50Ms, s.P95Ms = quantileMs(lats, 0.50), quantileMs(lats, 0.95)
	s.TTFTP50Ms, s.TTFTP95Ms = quantileMs(ttfts, 0.50), quantileMs(ttfts, 0.95)
	s.RatePerSec = float64(recent) / rateWindow.Seconds()
	return s
}

// quantileMs is the nearest-rank quantile of sorted durations, in ms.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}
