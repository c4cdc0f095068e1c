package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/p2p"
)

// topicValidators are the edge checks per topic: typed decoding, size
// limits (inside the decoders), signatures, expiry and replay, before
// anything else on the node sees a message. The gossip signer must be the
// record's own author, so a record cannot be re-published under someone
// else's name.
func (n *Node) topicValidators() map[string]p2p.RecordValidator {
	return map[string]p2p.RecordValidator{
		p2p.TopicRFQ:    n.rfqGate.Validator(p2p.TopicRFQ),
		p2p.TopicAttest: n.trust.ValidateAttest,
		p2p.TopicFraud:  p2p.NoRecord(n.trust.ValidateFraud),
	}
}

func (n *Node) registerValidators() error {
	for topic, v := range n.topicValidators() {
		if err := n.p2p.RegisterRecordValidator(topic, v); err != nil {
			return err
		}
	}
	n.p2p.SetEntryCheck(n.gossipEntry)
	return nil
}

// gossipEntry gives the check a forwarded gossip message passes before
// gossipsub remembers it (p2p.EntryCheck): the RFQ gate's budgets of
// forwarders on the RFQ topics (the static one, the shards' and their
// lots'). Every other topic's messages go straight on to its validator.
func (n *Node) gossipEntry(topic string) func(from peer.ID, data []byte) bool {
	if topic != p2p.TopicRFQ && !strings.HasPrefix(topic, auction.RFQShardPrefix) {
		return nil
	}
	return n.rfqGate.Entry
}

// apiBackend serves the API from the node.
type apiBackend struct{ n *Node }

func (b apiBackend) Identity() api.Identity {
	return api.Identity{PeerID: b.n.ID().String(), Role: string(b.n.cfg.Role), Version: FullVersion(), Addrs: b.n.P2PAddrs()}
}

func (b apiBackend) Status() api.Status {
	p := b.n.p2p
	view := b.n.trust.MarketView()
	return api.Status{
		Role:           string(b.n.cfg.Role),
		PeerID:         p.ID().String(),
		Version:        FullVersion(),
		Ready:          p.Ready(),
		StartedAt:      b.n.started.UTC(),
		UptimeSeconds:  time.Since(b.n.started).Seconds(),
		ListenAddrs:    addrStrings(p.ListenAddrs()),
		ObservedAddrs:  addrStrings(p.ObservedAddrs()),
		RoutingTable:   p.RoutingTableSize(),
		ConnectedPeers: len(p.ConnectedPeers()),
		TopicPeers:     p.TopicPeers(),
		NotReady:       b.notReady(),
		Reachability:   apiReachability(p.Reachability()),
		MarketView:     api.MarketView{Backed: view.Backed, Proven: view.Proven, Silent: view.Silent, Held: view.Held},
	}
}

func apiReachability(r p2p.Reachability) api.Reachability {
	return api.Reachability{State: string(r.State), Detail: r.Detail, PublicAddrs: addrStrings(r.PublicAddrs),
		Relays: addrStrings(r.Relays), RelayAddrs: addrStrings(r.RelayAddrs)}
}

func (b apiBackend) PublishDebug(ctx context.Context, topic string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return b.n.p2p.Publish(ctx, topic, data, 0)
}

func (b apiBackend) RecentGossip(topic string) ([]api.GossipMessage, error) {
	if !slices.Contains(p2p.AllTopics, topic) && !shardTopic(topic) {
		return nil, fmt.Errorf("topic %q is not one of %v", topic, p2p.AllTopics)
	}
	return b.n.gossip.Recent(topic), nil
}

func addrStrings[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// RecentGossip returns the last messages this node received on a topic
// (the debug API's view, for tests and operators).
func (n *Node) RecentGossip(topic string) []p2p.Message {
	var out []p2p.Message
	for _, m := range n.gossip.Recent(topic) {
		out = append(out, p2p.Message{Topic: m.Topic, Data: m.Data})
	}
	return out
}
