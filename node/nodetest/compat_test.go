package nodetest_test

import (
	"context"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestOtherVersionRecordsCostTheirSenderNothing: a node of a later
// release (a bare gossipsub client here) gossips records this release
// cannot read: an RFQ (on the providers' shard) and a chain entry
// (idlegrid/attest/1) of a newer
// "v", and the same with a field this release does not know. Every node
// skips them (docs/protocol.md §5.1): none is delivered, and the sender
// keeps a gossip score of at least 0 and no abuse points anywhere.
func TestOtherVersionRecordsCostTheirSenderNothing(t *testing.T) {
	c := nodetest.New(t, 6, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The providers' RFQ shard (nodetest's simulated GPUs are A10s).
	rfqTopic := auction.GPUShard("a10").RFQTopic()
	targets := c.Members[1:4]
	later := newBareClient(t, ctx, c, []pubsub.Option{pubsub.WithMessageSignaturePolicy(pubsub.StrictSign)}, targets, rfqTopic, p2p.TopicAttest)
	h, topics := later.h, later.topics
	key := h.Peerstore().PrivKey(h.ID())

	rfqRaw := a10RFQBy(t, key, "0123456789abcdef")
	chain, err := attest.NewChain(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	entry, _, err := chain.Append(time.Now().UnixMilli(), &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []attest.GPUFact{{
		UUID: "GPU-11111111-2222-3333-4444-555555555555", Name: "NVIDIA A10", PCIDeviceID: 0x223610de,
		MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	newer := func(m map[string]any) { m["v"] = uint64(99) }
	added := func(m map[string]any) { m["zz_added_later"] = true }
	sent := 0
	for topic, raw := range map[string][]byte{rfqTopic: rfqRaw, p2p.TopicAttest: entry} {
		for _, edit := range []func(map[string]any){newer, added} {
			if err := topics[topic].Publish(ctx, resign(t, raw, key, edit)); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	if err := nodetest.WaitFor(ctx, "the targets to skip what was sent", func() bool {
		skipped := 0.0
		for _, m := range targets {
			skipped += verdicts(t, m.Registry, "skip")
		}
		return skipped >= float64(sent)
	}); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if s := m.Node.P2P().GossipScore(h.ID()); s < 0 {
			t.Errorf("member %d scores the later node %v", m.Index, s)
		}
		for _, pa := range m.Node.P2P().PeerAbuse() {
			if pa.ID == h.ID() && (pa.AbusePoints > 0 || pa.Graylisted || pa.Banned) {
				t.Errorf("member %d charged the later node: %+v", m.Index, pa)
			}
		}
		for _, topic := range []string{rfqTopic, p2p.TopicAttest} {
			if got := len(m.Node.RecentGossip(topic)); got != 0 {
				t.Errorf("member %d delivered %d messages on %s", m.Index, got, topic)
			}
		}
	}
}

// resign signs raw's payload, changed by edit, again under raw's kind.
func resign(t *testing.T, raw []byte, key crypto.PrivKey, edit func(map[string]any)) []byte {
	t.Helper()
	out, err := attest.Reseal(raw, key, edit)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// verdicts sums idlegrid_gossip_validation_total{result} over topics.
func verdicts(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	return nodetest.CounterSum(t, reg, "idlegrid_gossip_validation_total", "result", result)
}
