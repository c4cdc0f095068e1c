package p2p

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// breakGossipState reproduces what a peer's restart does to pubsub:
// a's outbound gossip stream to b dies while a stays connected to b, so
// pubsub respawns the writer and forgets b's subscriptions.
func breakGossipState(t *testing.T, a, b *Node) {
	t.Helper()
	reset := 0
	for _, c := range a.host.Network().ConnsToPeer(b.ID()) {
		for _, s := range c.GetStreams() {
			if s.Protocol() == GossipProtocol && s.Stat().Direction == network.DirOutbound {
				_ = s.Reset()
				reset++
			}
		}
	}
	if reset == 0 {
		t.Fatal("no outbound gossip stream to reset")
	}
}

// healNet is a bootstrap peer and two nodes that subscribe to the
// presence topic and to TopicAttest, directly connected.
func healNet(t *testing.T, presence string) (a, b *Node) {
	t.Helper()
	nodes := mockNet(t, 3, func(_ int, c *Config) {
		c.PresenceTopic = presence
		c.GossipHealGrace = 200 * time.Millisecond
	})
	ctx := t.Context()
	for _, n := range nodes {
		for _, topic := range []string{TopicFraud, TopicAttest} {
			if err := n.Subscribe(ctx, topic, func(Message) {}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b = nodes[1], nodes[2]
	if err := a.host.Connect(ctx, b.host.Peerstore().PeerInfo(b.ID())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a to learn b's subscriptions", 20*time.Second, func() bool {
		return slices.Contains(a.ListTopicPeers(TopicAttest), b.ID())
	})
	return a, b
}

// Without the heal the fault is permanent: if a pubsub release fixes it,
// this test says so and gossip_heal.go can go.
func TestGossipStateLostWithoutHeal(t *testing.T) {
	a, b := healNet(t, "")
	breakGossipState(t, a, b)
	waitFor(t, "pubsub to forget b's subscriptions while connected", 20*time.Second, func() bool {
		return !slices.Contains(a.ListTopicPeers(TopicAttest), b.ID())
	})
	if a.host.Network().Connectedness(b.ID()) != network.Connected {
		t.Fatal("a and b must still be connected")
	}
}

func TestGossipHealReconnectsPeerWithLostSubscriptions(t *testing.T) {
	a, b := healNet(t, TopicFraud)
	got := make(chan string, 8)
	if err := b.Subscribe(t.Context(), TopicAttest, func(m Message) { got <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	breakGossipState(t, a, b)
	waitFor(t, "the heal to reconnect b", 20*time.Second, func() bool {
		return testutil.ToFloat64(a.metrics.healed) >= 1
	})
	waitFor(t, "a to learn b's subscriptions again", 20*time.Second, func() bool {
		return slices.Contains(a.ListTopicPeers(TopicAttest), b.ID()) &&
			slices.Contains(a.ListTopicPeers(TopicFraud), b.ID())
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := a.Publish(ctx, TopicAttest, []byte("after the heal"), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "after the heal" {
			t.Fatalf("b received %q", m)
		}
	case <-ctx.Done():
		t.Fatal("b did not receive a's message after the heal")
	}
}

// A gossip peer that has not (yet) announced the presence topic, but whose
// gossip stream never died, is slow, not broken: it is left alone. (On a
// busy node a new peer's announcement can take longer than the grace, and
// reconnecting it only adds to the load.)
func TestGossipHealLeavesSlowPeersAlone(t *testing.T) {
	nodes := mockNet(t, 3, func(_ int, c *Config) {
		c.PresenceTopic = TopicFraud
		c.GossipHealGrace = 100 * time.Millisecond
	})
	ctx := t.Context()
	a, b := nodes[1], nodes[2]
	if err := a.Subscribe(ctx, TopicFraud, func(Message) {}); err != nil {
		t.Fatal(err)
	}
	// b speaks gossip but never joins the presence topic.
	if err := b.Subscribe(ctx, TopicAttest, func(Message) {}); err != nil {
		t.Fatal(err)
	}
	if err := a.host.Connect(ctx, b.host.Peerstore().PeerInfo(b.ID())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a to know b as a gossip peer", 20*time.Second, func() bool {
		return slices.Contains(a.ps.ListPeers(""), b.ID())
	})
	deadline := time.Now().Add(20 * a.cfg.GossipHealGrace)
	for time.Now().Before(deadline) {
		if a.staleGossipPeers() != nil || testutil.ToFloat64(a.metrics.healed) != 0 {
			t.Fatal("a peer missing from the presence topic was reconnected though its gossip stream never died")
		}
		time.Sleep(a.cfg.GossipHealGrace / 2)
	}
}
