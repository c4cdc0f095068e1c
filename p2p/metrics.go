package p2p

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the p2p layer's own series. Gauges are read at scrape time,
// so there is no sampling loop to keep alive. They are built before the
// host (so that everything built after can count) and registered last.
type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	messages    *prometheus.CounterVec
	validation  *prometheus.CounterVec
	copies      *prometheus.CounterVec
	gossipBytes *prometheus.CounterVec
	// copiesBy and bytesBy resolve copies' and gossipBytes' children for
	// the gossip tracer.
	copiesBy, bytesBy *counterCache
	redials           *prometheus.CounterVec

	abusePoints *prometheus.CounterVec
	abuseEvents *prometheus.CounterVec
	bans        *prometheus.CounterVec
	streamRefs  *prometheus.CounterVec
	connRefs    *prometheus.CounterVec
	connCloses  *prometheus.CounterVec
	muxerFails  *prometheus.CounterVec
	dhtPuts     *prometheus.CounterVec
	throttledN  prometheus.Counter
	overload    *prometheus.CounterVec
	healed      prometheus.Counter
	reach       *prometheus.GaugeVec
	punches     *prometheus.CounterVec
	reasked     *prometheus.CounterVec
}

func newMetrics(n *Node) *metrics {
	counter := func(sub, name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "idlegrid", Subsystem: sub, Name: name, Help: help}, labels)
	}
	m := &metrics{
		messages: counter("gossip", "messages_total", "Gossip messages by topic and direction (published, received).", "topic", "direction"),
		validation: counter("gossip", "validation_total",
			"Topic validator verdicts by topic and result (accept, reject, ignore, withhold, skip); withhold also counts messages an entry check cut.", "topic", "result"),
		copies: counter("gossip", "copies_total",
			"Gossip messages received by topic, the first copy of each and the duplicates dropped (topics not joined: other).", "topic", "copy"),
		gossipBytes: counter("gossip", "bytes_total",
			"Gossip RPC bytes by direction (in, out) and part: message payloads by topic (not joined: other), and control.", "direction", "part"),
		redials:     counter("p2p", "redials_total", "Reconnect-loop dial attempts by result.", "result"),
		abusePoints: counter("p2p", "abuse_points_total", "Abuse points charged to peers, by reason.", "reason"),
		abuseEvents: counter("p2p", "abuse_events_total", "Abuse charges against peers, by reason.", "reason"),
		bans:        counter("p2p", "bans_total", "Peers banned for abuse, by the reason of the last charge.", "reason"),
		streamRefs:  counter("p2p", "stream_refusals_total", "Inbound streams refused or cut, by protocol and reason.", "protocol", "reason"),
		connRefs:    counter("p2p", "conn_refusals_total", "Connections refused or evicted, by reason.", "reason"),
		muxerFails: counter("p2p", "muxer_failures_total",
			"Connections the stream muxer (yamux) reported failed, by kind (keepalive_timeout: a keep-alive ping unanswered for 10 s, read_failed, go_away_error, other).", "kind"),
		connCloses: counter("p2p", "conns_closed_total",
			"Connections closed, by who closed them and why (conn_manager, admission, liveness_silent, gossip_heal, blocked; remote_or_network: not this node).", "reason"),
		dhtPuts: counter("dht", "puts_total", "Inbound DHT record PUTs by result (valid, invalid, other_version, throttled, banned).", "result"),
		punches: counter("p2p", "hole_punches_total", "Hole-punch attempts with peers reached through a relay, by result (direct, failed).", "result"),
		reach: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "reachability",
			Help: "1 for this node's reachability now (public, relayed, unreachable, unknown), 0 for the others.",
		}, []string{"state"}),
		throttledN: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "idlegrid", Subsystem: "gossip", Name: "throttled_total",
			Help: "Gossip messages dropped unvalidated because their peer was over its rate.",
		}),
		overload: counter("gossip", "overload_drops_total",
			"Gossip messages this node dropped because it could not keep up, by where: validation_queue (incoming, before any validator), validation_throttled (too many validations at once), send_queue (outgoing, a peer's queue full).", "where"),
		healed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "idlegrid", Subsystem: "gossip", Name: "healed_peers_total",
			Help: "Connected peers reconnected because gossipsub had lost their subscriptions.",
		}),
		reasked: counter("p2p", "identify_reasked_total",
			"Peers whose identify failed, asked again on the open connection: asks by result (asked, answered, unanswered).", "result"),
	}
	m.collectors = []prometheus.Collector{
		m.messages, m.validation, m.copies, m.gossipBytes, m.redials,
		m.abusePoints, m.abuseEvents, m.bans, m.streamRefs, m.connRefs, m.connCloses, m.muxerFails, m.dhtPuts, m.throttledN, m.overload, m.healed,
		m.punches, m.reach, m.reasked,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "connected_peers",
			Help: "Peers with at least one open connection.",
		}, func() float64 { return float64(len(n.host.Network().Peers())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "dht", Name: "routing_table_size",
			Help: "Peers in the Kademlia routing table.",
		}, func() float64 { return float64(n.dht.RoutingTable().Size()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "gossip", Name: "graylisted_peers",
			Help: "Peers whose gossipsub score is below the graylist threshold.",
		}, func() float64 { return float64(n.graylisted()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "banned_peers",
			Help: "Peers banned (abuse) or blocked (fraud) now.",
		}, func() float64 { return float64(n.blocklist.Count()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "refused_strangers",
			Help: "Peers proven to cheat that this node had no record of, refused for 30 days apart from the bans (at most 4,096).",
		}, func() float64 { return float64(len(n.blocklist.Strangers())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "idlegrid", Subsystem: "p2p", Name: "abuse_tracked_peers",
			Help: "Peers the abuse guard keeps state for (bounded).",
		}, func() float64 { return float64(n.guard.Tracked()) }),
		newResourceCollector(func() network.ResourceManager { return n.host.Network().ResourceManager() }),
	}
	m.copiesBy, m.bytesBy = &counterCache{vec: m.copies}, &counterCache{vec: m.gossipBytes}
	return m
}

// forgetTopic drops a left topic's series, so the label sets stay as
// bounded as the topics joined at once (a provider moves between lot
// topics for as long as it runs).
func (m *metrics) forgetTopic(topic string) {
	m.messages.DeletePartialMatch(prometheus.Labels{"topic": topic})
	m.validation.DeletePartialMatch(prometheus.Labels{"topic": topic})
	m.copiesBy.forget(0, "topic", topic)
	m.bytesBy.forget(1, "part", topic)
}

// register adds the series to reg; a nil reg registers nothing.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return fmt.Errorf("p2p: metrics: a node is already registered on this registry: %w", err)
			}
			return fmt.Errorf("p2p: metrics: %w", err)
		}
	}
	m.reg = reg
	return nil
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
	case Withhold:
		result = "withhold"
	case Skip:
		result = "skip"
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

func (m *metrics) charged(r AbuseReason, points float64) {
	m.abusePoints.WithLabelValues(string(r)).Add(points)
	m.abuseEvents.WithLabelValues(string(r)).Inc()
}

func (m *metrics) banned(r AbuseReason) { m.bans.WithLabelValues(string(r)).Inc() }

func (m *metrics) streamRefused(proto protocol.ID, reason string) {
	m.streamRefs.WithLabelValues(string(proto), reason).Inc()
}

func (m *metrics) connRefused(reason string) { m.connRefs.WithLabelValues(reason).Inc() }
func (m *metrics) connClosed(reason string)  { m.connCloses.WithLabelValues(reason).Inc() }
func (m *metrics) muxerFailed(kind string)   { m.muxerFails.WithLabelValues(kind).Inc() }
func (m *metrics) dhtPut(result string)      { m.dhtPuts.WithLabelValues(result).Inc() }
func (m *metrics) throttled(n int)           { m.throttledN.Add(float64(n)) }
func (m *metrics) gossipHealed()             { m.healed.Inc() }
func (m *metrics) identifyAsked()            { m.reasked.WithLabelValues("asked").Inc() }
func (m *metrics) identifyAnswered()         { m.reasked.WithLabelValues("answered").Inc() }
func (m *metrics) identifyUnanswered()       { m.reasked.WithLabelValues("unanswered").Inc() }

func (m *metrics) holePunched(ok bool) {
	if ok {
		m.punches.WithLabelValues("direct").Inc()
	} else {
		m.punches.WithLabelValues("failed").Inc()
	}
}

func (m *metrics) setReachability(now ReachState) {
	for _, st := range []ReachState{ReachPublic, ReachRelayed, ReachUnreachable, ReachUnknown} {
		v := 0.0
		if st == now {
			v = 1
		}
		m.reach.WithLabelValues(string(st)).Set(v)
	}
}
