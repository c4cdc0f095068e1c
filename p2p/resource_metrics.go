package p2p

import (
	"strings"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/prometheus/client_golang/prometheus"
)

// The resource manager's own metrics are off (rcmgr.WithMetricsDisabled in
// newResourceManager). They come from its trace: every reservation and
// release of memory, every stream and connection, takes the trace's one
// mutex, formats a timestamp and updates labelled counters. At 100 nodes
// on one machine that was 6 % of all CPU, 2.8 % of it the timestamps, for
// series no dashboard or alert reads. resourceCollector reports what an
// operator needs of it, the system and transient scopes' use, at scrape
// time instead, for nothing between scrapes.
type resourceCollector struct {
	rm   func() network.ResourceManager // the host's, built after the metrics
	desc *prometheus.Desc
}

func newResourceCollector(rm func() network.ResourceManager) *resourceCollector {
	return &resourceCollector{rm: rm, desc: prometheus.NewDesc("idlegrid_p2p_resources_in_use",
		"What the libp2p resource manager counts in use, by scope (system: everything; transient: connections and streams not yet tied to a peer or protocol) and resource (conns_inbound, conns_outbound, streams_inbound, streams_outbound, fds, memory_bytes).",
		[]string{"scope", "resource"}, nil)}
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(scope string) func(network.ResourceScope) error {
		return func(s network.ResourceScope) error {
			st := s.Stat()
			for _, v := range []struct {
				resource string
				n        int64
			}{
				{"conns_inbound", int64(st.NumConnsInbound)},
				{"conns_outbound", int64(st.NumConnsOutbound)},
				{"streams_inbound", int64(st.NumStreamsInbound)},
				{"streams_outbound", int64(st.NumStreamsOutbound)},
				{"fds", int64(st.NumFD)},
				{"memory_bytes", st.Memory},
			} {
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v.n), scope, v.resource)
			}
			return nil
		}
	}
	rm := c.rm()
	_ = rm.ViewSystem(emit("system"))
	_ = rm.ViewTransient(emit("transient"))
}

// rcmgrMetricPrefix names the resource manager's series, which libp2p
// registers whenever its metrics are on, whether or not anything feeds
// them.
const rcmgrMetricPrefix = "libp2p_rcmgr_"

// withoutRcmgrMetrics is reg less the resource manager's collectors: with
// their source disabled they would report zeros, and a zero that means
// "not measured" misleads an operator.
type withoutRcmgrMetrics struct{ prometheus.Registerer }

func (w withoutRcmgrMetrics) Register(c prometheus.Collector) error {
	if describesOnly(c, rcmgrMetricPrefix) {
		return nil
	}
	return w.Registerer.Register(c)
}

func (w withoutRcmgrMetrics) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := w.Register(c); err != nil {
			panic(err)
		}
	}
}

// describesOnly reports whether every series c describes is named with
// prefix.
func describesOnly(c prometheus.Collector, prefix string) bool {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	all, some := true, false
	for d := range ch {
		some = true
		// A Desc shows its name only in its String: `Desc{fqName: "…", …}`.
		if !strings.Contains(d.String(), `fqName: "`+prefix) {
			all = false
		}
	}
	return some && all
}
