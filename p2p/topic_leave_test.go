package p2p

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A provider moves between lot topics for as long as it runs. Each topic
// it stops following must be left (handle, validator, metric series), or
// after MaxTopics moves it could join none: here MaxTopics is 3 and the
// two nodes follow 8 topics one after another, then the first again, whose
// validator must register afresh (a duplicate would fail the join).
func TestTopicsJoinedAfterStartAreLeft(t *testing.T) {
	const prefix = "idlegrid/test-lot/"
	nodes := mockNet(t, 3, func(_ int, c *Config) {
		c.TopicPolicy = func(topic string) bool { return strings.HasPrefix(topic, prefix) }
		c.MaxTopics = 3
	})
	for _, n := range nodes[1:] {
		waitFor(t, "routing table", 30*time.Second, n.Ready)
		n.SetValidatorFactory(func(string) RecordValidator {
			return NoRecord(func(context.Context, peer.ID, peer.ID, []byte) Verdict { return Accept })
		})
	}
	pub, sub := nodes[1], nodes[2]
	seq, sent := 0, time.Time{}
	follow := func(topic string) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		var received atomic.Int64
		for _, n := range []*Node{pub, sub} {
			if err := n.Subscribe(ctx, topic, func(Message) {
				if n == sub {
					received.Add(1)
				}
			}); err != nil {
				t.Fatalf("subscribe %s: %v", topic, err)
			}
		}
		waitFor(t, "a topic peer on "+topic, 30*time.Second, func() bool { return len(pub.ListTopicPeers(topic)) > 0 })
		// The receiving node's validator saw a message: it crossed the
		// network. A new message every 2 s, as the mesh may still be
		// forming (TestGossipReachesEverySubscriberAndValidatorGates).
		waitFor(t, "a message on "+topic+" at the other node", 60*time.Second, func() bool {
			if time.Since(sent) > 2*time.Second {
				seq++
				sent = time.Now()
				if err := pub.Publish(ctx, topic, fmt.Appendf(nil, "bid %d", seq), 1); err != nil {
					t.Fatalf("publish on %s: %v", topic, err)
				}
			}
			return received.Load() > 0
		})
		cancel()
		for _, n := range []*Node{pub, sub} {
			waitFor(t, topic+" left", 30*time.Second, func() bool { return !slices.Contains(n.JoinedTopics(), topic) })
		}
	}
	for i := range 8 {
		follow(fmt.Sprintf("%s%d", prefix, i))
	}
	follow(prefix + "0")
	for _, n := range []*Node{pub, sub} {
		if left := testutil.CollectAndCount(n.metrics.messages); left != 0 {
			t.Errorf("%d message series of left topics kept", left)
		}
		if left := testutil.CollectAndCount(n.metrics.copies); left != 0 {
			t.Errorf("%d copy series of left topics kept", left)
		}
	}
}

// A renter only publishes on its lot topics, which no subscription ends:
// past MaxTopics the one published on longest ago makes room, and never a
// topic the node subscribes to.
func TestPublishOnlyTopicsMakeRoom(t *testing.T) {
	const prefix = "idlegrid/test-lot/"
	nodes := mockNet(t, 2, func(_ int, c *Config) {
		c.TopicPolicy = func(topic string) bool { return strings.HasPrefix(topic, prefix) }
		c.MaxTopics = 3
	})
	n := nodes[1]
	n.SetValidatorFactory(func(string) RecordValidator {
		return NoRecord(func(context.Context, peer.ID, peer.ID, []byte) Verdict { return Accept })
	})
	followed := prefix + "followed"
	if err := n.Subscribe(t.Context(), followed, func(Message) {}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		topic := fmt.Sprintf("%srfq-%d", prefix, i)
		if err := n.Publish(t.Context(), topic, fmt.Appendf(nil, "rfq %d", i), 0); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	want := []string{prefix + "followed", prefix + "rfq-4", prefix + "rfq-5"}
	if got := n.JoinedTopics(); !slices.Equal(got, want) {
		t.Fatalf("joined %v, want %v", got, want)
	}
	// One left to make room joins again.
	if err := n.Publish(t.Context(), prefix+"rfq-0", []byte("rfq 0 again"), 0); err != nil {
		t.Fatal(err)
	}
	want = []string{prefix + "followed", prefix + "rfq-0", prefix + "rfq-5"}
	if got := n.JoinedTopics(); !slices.Equal(got, want) {
		t.Fatalf("joined %v, want %v", got, want)
	}
}
