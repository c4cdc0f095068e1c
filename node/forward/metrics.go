package forward

import "github.com/prometheus/client_golang/prometheus"

// metrics of one side of the tunnel ("served" on the provider, "client"
// on the renter).
type metrics struct {
	tunnels  *prometheus.CounterVec // by result
	open     prometheus.Gauge
	bytes    *prometheus.CounterVec // by direction: in (towards the service), out
	requests prometheus.Counter
	latency  prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, side string) *metrics {
	ns := "idlegrid_forward_" + side
	m := &metrics{
		tunnels: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "_tunnels_total",
			Help: "Tunnels opened, by result (ok, refused, not_found, unavailable, malformed, error)."}, []string{"result"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "_open_tunnels", Help: "Tunnels open now."}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "_bytes_total",
			Help: "Bytes carried, by direction (in: towards the service, out: from it)."}, []string{"direction"}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "_requests_total",
			Help: "Requests measured (a client's request answered by the service)."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: ns + "_request_seconds",
			Help:    "Time from a request to the first byte of its answer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	if reg != nil {
		cs := []prometheus.Collector{m.tunnels, m.open, m.bytes}
		if side == "client" {
			cs = append(cs, m.requests, m.latency)
		}
		for _, c := range cs {
			_ = reg.Register(c) // a second forwarder shares the first one's series
		}
	}
	return m
}
