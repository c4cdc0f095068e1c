package p2p

import (
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
)

// gossipTrace counts what gossip costs this node, for operators and for
// calibrating the scale model (auction/netmodel): copies of each message
// received (the first and the duplicates gossipsub drops), and RPC bytes
// in and out, split into message payloads by topic and control
// (subscriptions, IHAVE, IWANT, GRAFT, PRUNE, IDONTWANT). Topics this
// node has not joined are counted as "other", so a peer cannot grow the
// label set.
type gossipTrace struct {
	n         *Node
	copies    *counterCache // by topic label and copy (first, duplicate)
	wireBytes *counterCache // by direction and part
}

func newGossipTrace(n *Node) gossipTrace {
	return gossipTrace{n: n, copies: n.metrics.copiesBy, wireBytes: n.metrics.bytesBy}
}

// counterCache resolves each child of a two-label counter once: the
// tracer counts every RPC on gossipsub's event loop, where WithLabelValues
// (label checks, a hash, a locked map) was most of its cost. Its keys are
// as bounded as the labels: the topics joined, "other" and "control".
type counterCache struct {
	vec *prometheus.CounterVec
	m   sync.Map // [2]string -> prometheus.Counter
}

func (c *counterCache) with(a, b string) prometheus.Counter {
	k := [2]string{a, b}
	if v, ok := c.m.Load(k); ok {
		return v.(prometheus.Counter)
	}
	ctr := c.vec.WithLabelValues(a, b)
	c.m.Store(k, ctr)
	return ctr
}

// forget drops the children whose label named name, at index i (0 or 1),
// is value. Called after the tracer stops using value
// (joinedTopics.remove), so at worst a call already under way puts one
// child back, which is then both cached and in the vector, as any other.
func (c *counterCache) forget(i int, name, value string) {
	c.m.Range(func(k, _ any) bool {
		if k.([2]string)[i] == value {
			c.m.Delete(k)
		}
		return true
	})
	c.vec.DeletePartialMatch(prometheus.Labels{name: value})
}

// joinedTopics is the set of topics the node joined, for the tracer's
// labels. It is not n.topics: the tracer runs on gossipsub's event loop,
// which Join waits for while n.mu is held.
type joinedTopics struct{ m sync.Map }

func (j *joinedTopics) add(topic string)      { j.m.Store(topic, true) }
func (j *joinedTopics) remove(topic string)   { j.m.Delete(topic) }
func (j *joinedTopics) has(topic string) bool { _, ok := j.m.Load(topic); return ok }

var _ pubsub.RawTracer = gossipTrace{}

// label is the topic label: the topic if joined, else "other".
func (t gossipTrace) label(topic string) string {
	if t.n.joined.has(topic) {
		return topic
	}
	return "other"
}

func (t gossipTrace) ValidateMessage(m *pubsub.Message) {
	t.copies.with(t.label(m.GetTopic()), "first").Inc()
}

func (t gossipTrace) DuplicateMessage(m *pubsub.Message) {
	t.copies.with(t.label(m.GetTopic()), "duplicate").Inc()
}

// RecvRPC also tells the liveness watch that the sender is alive
// (liveness.go): its gossip is as good an answer as a ping.
func (t gossipTrace) RecvRPC(rpc *pubsub.RPC) {
	t.n.pings.heardFrom(rpc.From(), time.Now())
	t.bytes(rpc, "in")
}

func (t gossipTrace) SendRPCCompleted(rpc *pubsub.RPC, _ peer.ID, _ time.Duration) {
	t.bytes(rpc, "out")
}

// bytes counts an RPC's wire size: each message under its topic, the rest
// (subscriptions, control, framing) as control.
func (t gossipTrace) bytes(rpc *pubsub.RPC, dir string) {
	rest := proto.Size(&rpc.RPC)
	for _, m := range rpc.GetPublish() {
		sz := proto.Size(m)
		rest -= sz
		t.wireBytes.with(dir, t.label(m.GetTopic())).Add(float64(sz))
	}
	if rest > 0 {
		t.wireBytes.with(dir, "control").Add(float64(rest))
	}
}

// OnClosedOutboundStream: gossipsub dropped its writer to p. If p is
// still connected, gossipsub respawns the writer but has forgotten p's
// subscriptions (gossip_heal.go): the heal loop looks at p.
func (t gossipTrace) OnClosedOutboundStream(p peer.ID) {
	if t.n.host.Network().Connectedness(p) == network.Connected {
		t.n.heal.suspect(p, time.Now())
	}
}

func (t gossipTrace) Graft(p peer.ID, topic string) { t.n.mesh.graft(p, topic) }
func (t gossipTrace) Prune(p peer.ID, topic string) { t.n.mesh.prune(p, topic) }
func (t gossipTrace) Leave(topic string)            { t.n.mesh.leave(topic) }

func (gossipTrace) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (gossipTrace) Join(string)                              {}
func (gossipTrace) DeliverMessage(*pubsub.Message)           {}
func (gossipTrace) ThrottlePeer(peer.ID)                     {}
func (gossipTrace) SendRPC(*pubsub.RPC, peer.ID)             {}
func (gossipTrace) UndeliverableMessage(*pubsub.Message)     {}

// RejectMessage counts the messages gossipsub dropped because this node
// could not keep up: a node that drops honest messages unvalidated misses
// auctions, and nothing else would say so. Its other reasons are counted
// where they are decided (validators, the abuse guard).
func (t gossipTrace) RejectMessage(_ *pubsub.Message, reason string) {
	switch reason {
	case pubsub.RejectValidationQueueFull:
		t.n.metrics.overload.WithLabelValues("validation_queue").Inc()
	case pubsub.RejectValidationThrottled:
		t.n.metrics.overload.WithLabelValues("validation_throttled").Inc()
	}
}

// DropRPC counts the messages of an RPC gossipsub dropped because the
// peer's outgoing queue was full.
func (t gossipTrace) DropRPC(rpc *pubsub.RPC, _ peer.ID) {
	if n := len(rpc.GetPublish()); n > 0 {
		t.n.metrics.overload.WithLabelValues("send_queue").Add(float64(n))
	}
}

// meshView is this node's gossip mesh as the tracer saw it grafted and
// pruned. gossipsub does not trace a disconnected peer leaving the mesh,
// so readers intersect it with the topic's connected peers (Node.meshPeers).
type meshView struct {
	mu sync.Mutex
	m  map[string]map[peer.ID]struct{}
}

func (v *meshView) graft(p peer.ID, topic string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]map[peer.ID]struct{}{}
	}
	if v.m[topic] == nil {
		v.m[topic] = map[peer.ID]struct{}{}
	}
	v.m[topic][p] = struct{}{}
}

func (v *meshView) prune(p peer.ID, topic string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m[topic], p)
}

func (v *meshView) leave(topic string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, topic)
}

func (v *meshView) has(p peer.ID, topic string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.m[topic][p]
	return ok
}

// meshPeers are the topic's connected subscribers in this node's mesh:
// the peers it forwards the topic's messages to.
func (n *Node) meshPeers(topic string) []peer.ID {
	var out []peer.ID
	for _, p := range n.ListTopicPeers(topic) {
		if n.mesh.has(p, topic) {
			out = append(out, p)
		}
	}
	return out
}
