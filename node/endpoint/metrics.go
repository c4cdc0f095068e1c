package endpoint

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are every endpoint's series: labelled by replica slot (at most
// auction.MaxReplicas), never by job or lease, so their number is bounded.
type metrics struct {
	requests *prometheus.CounterVec // by result
	errors   *prometheus.CounterVec // by slot
	tokens   *prometheus.CounterVec // by slot and kind
	latency  *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
}

func slotLabel(slot int) string { return strconv.Itoa(slot) }

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns = "idlegrid_endpoint_"
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "requests_total",
			Help: "Requests through service endpoints, by result (ok, broken: cut after the first byte, client_gone, retried: sent again to another replica, unavailable: no replica could take it)."}, []string{"result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "replica_errors_total",
			Help: "Attempts a replica failed before answering, by replica slot."}, []string{"slot"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "tokens_total",
			Help: "Tokens the answers' usage reported, by replica slot and kind (prompt, completion)."}, []string{"slot", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: ns + "request_seconds",
			Help: "Time from a request to the last byte of its answer, by replica slot.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"slot"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: ns + "ttft_seconds",
			Help: "Time from a request to the first byte of its answer's body (time to first token), by replica slot.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"slot"}),
	}
	if reg != nil {
		// A second endpoint shares the first one's series.
		m.requests = register(reg, m.requests)
		m.errors = register(reg, m.errors)
		m.tokens = register(reg, m.tokens)
		m.latency = register(reg, m.latency)
		m.ttft = register(reg, m.ttft)
	}
	return m
}

// register registers c, or returns the collector already registered in
// its place.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(c); errors.As(err, &are) {
		if ex, ok := are.ExistingCollector.(C); ok {
			return ex
		}
	}
	return c
}

func (m *metrics) observe(slot int, lat, ttft time.Duration, u usage, broken, clientGone bool) {
	result := "ok"
	switch {
	case broken:
		result = "broken"
	case clientGone:
		result = "client_gone"
	}
	s := slotLabel(slot)
	m.requests.WithLabelValues(result).Inc()
	m.latency.WithLabelValues(s).Observe(lat.Seconds())
	m.ttft.WithLabelValues(s).Observe(ttft.Seconds())
	m.tokens.WithLabelValues(s, "prompt").Add(float64(u.PromptTokens))
	m.tokens.WithLabelValues(s, "completion").Add(float64(u.CompletionTokens))
}
