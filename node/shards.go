package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// Sharded gossip (docs/protocol.md §3.5): RFQs go to the topic of each GPU
// family they can run on, and providers gossip their capacity digests on
// their families' digest topics. The topic names are open (a new GPU
// family needs no new release), so p2p admits them by a policy, and the
// node gives each its validator when it is first joined.

// shardTopic is the topic policy: a well-formed shard topic.
func shardTopic(topic string) bool {
	_, err := auction.ParseShardTopic(topic)
	return err == nil
}

// shardRendezvous is the topic rendezvous (p2p.Config.TopicRendezvous)
// of a provider (provider true) or another role. A shard's providers
// subscribe to all three of its topics, so the key of its RFQ topic finds
// them for all three, and only they announce it: one DHT announcement and
// one lookup per shard where there were three of each; a provider looks
// up only its RFQ topics' keys. Renters announce nothing on shard topics;
// nobody looks for them there.
//
// The release before the last also looked a digest topic up under its
// own key, which the last release announced for it; this one no longer
// does (docs/protocol.md §2).
func shardRendezvous(provider bool) func(topic string) (find, announce string) {
	return func(topic string) (string, string) {
		st, err := auction.ParseShardTopic(topic)
		if err != nil {
			return topic, topic
		}
		key := auction.LotTopic(st.Shard.RFQTopic(), st.Lot, st.Lots) // a lot's members meet under its own key
		switch {
		case provider && st.Kind == auction.ShardTopicRFQ:
			return key, key
		case provider:
			// Its RFQ topic's lookups find the same peers; the digest topics
			// of the lots its own splits from or into are empty but for a
			// change of count (auction.ProviderShardTopics), and a lookup
			// of a key nobody announces would run every few seconds.
			return "", ""
		}
		return key, ""
	}
}

// shardValidator is the validator of a shard topic. RFQ and attestation
// validators hand on the record they opened (p2p.RecordValidator), which
// the bidder and trust then read instead of checking its signature again.
func (n *Node) shardValidator(topic string) p2p.RecordValidator {
	st, err := auction.ParseShardTopic(topic)
	if err != nil {
		return func(context.Context, peer.ID, peer.ID, []byte) (p2p.Verdict, any) { return p2p.Reject, nil }
	}
	switch st.Kind {
	case auction.ShardTopicDigest:
		return p2p.NoRecord(n.trust.ValidateDigest(topic))
	case auction.ShardTopicAttest:
		return n.trust.ValidateShardAttest(topic)
	}
	return func(_ context.Context, from, signer peer.ID, data []byte) (p2p.Verdict, any) {
		rfq, v := n.rfqGate.Check(topic, from, signer, data)
		if v != p2p.Accept {
			return v, nil
		}
		if !auction.RFQOnShard(rfq, st.Shard) {
			return p2p.Reject, nil // no honest renter sends it here
		}
		return p2p.Accept, rfq
	}
}

// shardSubscriptions tracks the shard topics this node follows.
type shardSubscriptions struct {
	mu     sync.Mutex
	joined map[string]bool
}

// follow subscribes to a shard topic once, with its handler.
func (n *Node) follow(ctx context.Context, topic string) error {
	n.shardSubs.mu.Lock()
	if n.shardSubs.joined == nil {
		n.shardSubs.joined = map[string]bool{}
	}
	if n.shardSubs.joined[topic] {
		n.shardSubs.mu.Unlock()
		return nil
	}
	n.shardSubs.joined[topic] = true
	n.shardSubs.mu.Unlock()
	if err := n.p2p.Subscribe(ctx, topic, n.onShardGossip(ctx, topic)); err != nil {
		n.shardSubs.mu.Lock()
		delete(n.shardSubs.joined, topic)
		n.shardSubs.mu.Unlock()
		return fmt.Errorf("follow %s: %w", topic, err)
	}
	return nil
}

// followShards subscribes a provider to the RFQ, digest and attestation
// topics of its shards, each as one lot until its view splits it
// (followShardLots). The attestation topics carry the award summaries
// that end its auctions and price its models; on the CPU shard's, a GPU
// provider hears only the heartbeats of providers without GPUs
// (auction.BeatShards), a small share.
func (n *Node) followShards(ctx context.Context) error {
	if n.provider == nil {
		return nil
	}
	for _, s := range n.provider.Shards() {
		if err := n.followShardLots(ctx, s, 1); err != nil {
			return fmt.Errorf("follow shard %s: %w", s, err)
		}
	}
	return nil
}

// onShardGossip handles validated messages of a shard topic.
func (n *Node) onShardGossip(ctx context.Context, topic string) func(p2p.Message) {
	st, _ := auction.ParseShardTopic(topic)
	switch st.Kind {
	case auction.ShardTopicDigest:
		// The validator took the digest into trust's book (it keeps even
		// those it withholds, to check them); delivery adds nothing.
		return func(p2p.Message) {}
	case auction.ShardTopicAttest:
		return func(m p2p.Message) { n.trust.OnAttest(ctx, m.Data, m.Record) }
	}
	return n.onGossip(ctx, p2p.TopicRFQ)
}
