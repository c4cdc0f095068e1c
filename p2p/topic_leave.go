package p2p

import (
	"fmt"
	"slices"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// A topic joined after start (one Config.TopicPolicy admits, such as a
// shard's lot topics) is left when its last subscription ends: its handle
// closed, its validator unregistered and its metric series dropped. A
// provider moves between lot topics as its shards grow and shrink, for as
// long as it runs; without this every topic it ever followed would stay
// joined until Config.MaxTopics refused the next one, and the provider
// could no longer follow its lot. gossipsub itself unsubscribes (and
// leaves the mesh) when the last subscription ends; this undoes the rest
// of what topicLocked did. A topic this node only publishes on (a
// renter's RFQ topics) has no subscription to end: it stays joined until
// the node holds MaxTopics topics, and then the one published on longest
// ago makes room for a new one.
//
// The static topics (Config.Topics) are never left: their validators are
// registered once, by the node's owner.

// subscribe joins topic if need be and subscribes to it, counting the
// subscription under n.mu, so a topic is never left between the two.
func (n *Node) subscribe(topic string) (*pubsub.Subscription, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, err := n.topicLocked(topic)
	if err != nil {
		return nil, err
	}
	sub, err := t.Subscribe(pubsub.WithBufferSize(256))
	if err != nil {
		return nil, fmt.Errorf("p2p: subscribe %q: %w", topic, err)
	}
	n.subs[topic]++
	return sub, nil
}

// unsubscribe ends sub and, when it was its topic's last subscription,
// leaves a topic joined after start.
func (n *Node) unsubscribe(sub *pubsub.Subscription) {
	sub.Cancel()
	// Cancel only asks gossipsub's event loop; the subscription is gone
	// once its channel is closed, and only then may the topic close.
	for {
		if _, err := sub.Next(n.psCtx); err != nil {
			break
		}
	}
	topic := sub.Topic()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.subs[topic]--; n.subs[topic] > 0 {
		return
	}
	delete(n.subs, topic)
	n.leaveLocked(topic)
}

// topicToPublish is topic for a publish, noting when a topic joined
// after start was last published on.
func (n *Node) topicToPublish(name string) (*pubsub.Topic, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, err := n.topicLocked(name)
	if err == nil && !slices.Contains(n.cfg.Topics, name) {
		n.published[name] = time.Now()
	}
	return t, err
}

// leaveLocked closes topic, joined after start and with no subscription,
// and undoes its join; n.mu is held. It reports whether it did.
func (n *Node) leaveLocked(topic string) bool {
	t, ok := n.topics[topic]
	if !ok || n.closed || n.subs[topic] > 0 || n.validatorFor == nil || slices.Contains(n.cfg.Topics, topic) {
		return false
	}
	if err := t.Close(); err != nil {
		// Still in use (a relay or event handler this package does not
		// make); keep it.
		n.log.Debug("leave topic", "topic", topic, "err", err)
		return false
	}
	delete(n.topics, topic)
	delete(n.published, topic)
	n.joined.remove(topic)
	if err := n.ps.UnregisterTopicValidator(topic); err != nil {
		n.log.Debug("leave topic: unregister its validator", "topic", topic, "err", err)
	}
	n.metrics.forgetTopic(topic)
	return true
}

// makeTopicRoomLocked leaves, when the node holds MaxTopics topics, the
// one published on longest ago of those it only publishes on (n.mu
// held). A renter publishes on the lot topics of each count its shards
// go through; the topics of counts it no longer uses would otherwise
// fill the bound. A later publish on it joins it again.
func (n *Node) makeTopicRoomLocked() {
	if len(n.topics) < n.cfg.maxTopics() {
		return
	}
	oldest, at := "", time.Time{}
	for topic, last := range n.published {
		if n.subs[topic] == 0 && (oldest == "" || last.Before(at)) {
			oldest, at = topic, last
		}
	}
	if oldest != "" {
		n.leaveLocked(oldest)
	}
}
