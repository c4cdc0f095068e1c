package nodetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestClusterRoutingAndGossip is the foundation's network test: 14 nodes
// (1 bootstrap, 12 providers, 1 renter) on mocknet, more than one
// gossipsub mesh degree, so delivery takes several hops. Every routing
// table fills, and an RFQ-topic message published by the renter reaches
// every subscribed provider exactly once.
func TestClusterRoutingAndGossip(t *testing.T) {
	const n = 14
	c := nodetest.New(t, n, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if m.Node.P2P().RoutingTableSize() == 0 {
			t.Fatalf("member %d has an empty routing table", m.Index)
		}
	}
	providers := c.ByRole(node.RoleProvider)
	renter := c.ByRole(node.RoleRenter)[0]

	var mu sync.Mutex
	var probe []byte // sealed just before it is published, so it cannot expire in the waits
	got := map[int]int{}
	for _, m := range providers {
		if err := m.Node.P2P().Subscribe(ctx, p2p.TopicRFQ, func(msg p2p.Message) {
			mu.Lock()
			defer mu.Unlock()
			if probe != nil && string(msg.Data) == string(probe) {
				got[m.Index]++
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The subscribers must form one connected component before a single
	// publish can reach all of them; wait for that, not for a fixed time.
	if err := nodetest.WaitFor(ctx, "a connected rfq subscriber graph", func() bool {
		return topicGraphConnected(providers, p2p.TopicRFQ) && len(renter.Node.P2P().ListTopicPeers(p2p.TopicRFQ)) > 0
	}); err != nil {
		t.Fatal(err)
	}
	sealed := sealedRFQ(t, renter)
	mu.Lock()
	probe = sealed
	mu.Unlock()
	if err := renter.Node.P2P().Publish(ctx, p2p.TopicRFQ, sealed, 1); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "delivery to every provider", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(providers)
	}); err != nil {
		mu.Lock()
		t.Fatalf("%v: %d of %d providers got the message", err, len(got), len(providers))
	}
	mu.Lock()
	defer mu.Unlock()
	for idx, count := range got {
		if count != 1 {
			t.Errorf("provider %d received the message %d times; content IDs must deduplicate", idx, count)
		}
	}
}

// sealedRFQ is a valid RFQ signed by the member (only valid RFQs pass the
// topic's validators), for a job no provider can serve.
func sealedRFQ(t *testing.T, m *nodetest.Member) []byte {
	t.Helper()
	spec, err := auction.ParseJobSpec(jobYAML(jobOpts{name: "probe", gpus: 1, model: "h200", duration: "1m"}))
	if err != nil {
		t.Fatal(err)
	}
	rfq, err := spec.RFQ(m.Node.ID(), []byte("0123456789abcdef"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := auction.SealRFQ(rfq, m.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func topicGraphConnected(ms []*nodetest.Member, topic string) bool {
	index := map[peer.ID]int{}
	for i, m := range ms {
		index[m.Node.ID()] = i
	}
	seen := make([]bool, len(ms))
	stack := []int{0}
	seen[0] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range ms[i].Node.P2P().ListTopicPeers(topic) {
			if j, ok := index[p]; ok && !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	for _, s := range seen {
		if !s {
			return false
		}
	}
	return true
}

// TestInvalidMessagesStopAtTheEdge checks that a message every node's
// validator rejects is delivered nowhere.
func TestInvalidMessagesStopAtTheEdge(t *testing.T) {
	c := nodetest.New(t, 5, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	pub := c.ByRole(node.RoleProvider)[0].Node.P2P()
	if err := pub.Publish(ctx, p2p.TopicAttest, nil, 0); err == nil {
		t.Fatal("an empty payload must be rejected by the publisher's own validator")
	}
	if err := pub.Publish(ctx, "idlegrid/other/1", []byte("x"), 0); err == nil {
		t.Fatal("a topic outside the allowlist must be refused")
	}
}
