package p2p

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the p2p layer's own series. Gauges are read at scrape time,
// so there is no sampling loop to keep alive.
type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	messages   *prometheus.CounterVec
	validation *prometheus.CounterVec
	redials    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, n *Node) (*metrics, error) {
	m := &metrics{
		reg: reg,
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "idlegrid", Subsystem: "gossip", Name: "messages_total",
			Help: "Gossip messages by topic and direction (published, received).",
		}, []string{"topic", "direction"}),
		validation: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "idlegrid", Subsystem: "gossip", Name: "validation_total",
			Help: "Topic validator verdicts by topic and result.",
		}, []string{"topic", "result"}),
		redials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "redials_total",
			Help: "Reconnect-loop dial attempts by result.",
		}, []string{"result"}),
	}
	m.collectors = []prometheus.Collector{
		m.messages, m.validation, m.redials,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "connected_peers",
			Help: "Peers with at least one open connection.",
		}, func() float64 { return float64(len(n.host.Network().Peers())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "dht", Name: "routing_table_size",
			Help: "Peers in the Kademlia routing table.",
		}, func() float64 { return float64(n.dht.RoutingTable().Size()) }),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("p2p: metrics: a node is already registered on this registry: %w", err)
			}
			return nil, fmt.Errorf("p2p: metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}

func (m *metrics) published(topic string) { m.messages.WithLabelValues(topic, "published").Inc() }
func (m *metrics) received(topic string)  { m.messages.WithLabelValues(topic, "received").Inc() }

func (m *metrics) validated(topic string, v Verdict) {
	result := "accept"
	switch v {
	case Reject:
		result = "reject"
	case Ignore:
		result = "ignore"
	}
	m.validation.WithLabelValues(topic, result).Inc()
}

func (m *metrics) redial(ok bool) {
	if ok {
		m.redials.WithLabelValues("ok").Inc()
	} else {
		m.redials.WithLabelValues("failed").Inc()
	}
}
