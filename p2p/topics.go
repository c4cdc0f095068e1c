package p2p

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrTopicNotAllowed is returned for a topic outside the allowlist.
var ErrTopicNotAllowed = errors.New("topic not in the allowlist")

// ErrTooManyTopics is returned when joining one more topic would pass
// Config.MaxTopics.
var ErrTooManyTopics = errors.New("too many topics")

// Message is a validated gossip message.
type Message struct {
	Topic string
	// From is the peer that signed and first published it; "" when the
	// message carries no gossip signature (the record inside names its
	// author).
	From peer.ID
	// ReceivedFrom is the peer that forwarded it to us.
	ReceivedFrom peer.ID
	Data         []byte
	// Record is what the topic's validator opened of Data
	// (RecordValidator), nil if it handed nothing on. It is shared by
	// every subscription to the topic: read it, never change it.
	Record any
}

// topicLocked joins a topic, or returns the one joined; n.mu is held.
func (n *Node) topicLocked(name string) (*pubsub.Topic, error) {
	if !n.cfg.allowed(name) {
		return nil, fmt.Errorf("p2p: topic %q: %w", name, ErrTopicNotAllowed)
	}
	if n.closed {
		return nil, ErrClosed
	}
	if t, ok := n.topics[name]; ok {
		return t, nil
	}
	n.makeTopicRoomLocked()
	if len(n.topics) >= n.cfg.maxTopics() {
		return nil, fmt.Errorf("p2p: join %q: %d topics joined already: %w", name, len(n.topics), ErrTooManyTopics)
	}
	if !slices.Contains(n.cfg.Topics, name) && n.validatorFor != nil {
		// A topic the policy admits gets its validator before any of its
		// messages can arrive.
		if err := n.RegisterRecordValidator(name, n.validatorFor(name)); err != nil {
			return nil, err
		}
	}
	t, err := n.ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("p2p: join %q: %w", name, err)
	}
	if !slices.Contains(n.cfg.Topics, name) {
		// Topics joined later score like the static ones.
		if err := t.SetScoreParams(topicScoreParams()); err != nil {
			n.log.Debug("topic score params", "topic", name, "err", err)
		}
	}
	n.topics[name] = t
	n.joined.add(name)
	return t, nil
}

// SetValidatorFactory gives the validator of each topic the topic policy
// admits; it is registered when the topic is first joined (published on
// or subscribed to). Set it before Run.
func (n *Node) SetValidatorFactory(f func(topic string) RecordValidator) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.validatorFor = f
}

// RegisterValidator installs the validator for a topic. Every message on
// the topic, ours included, passes through it before delivery or
// forwarding. Register before subscribing. The validator is guarded
// (GuardValidator): Ignore and Reject verdicts are charged to the
// forwarding peer, and peers over their rate never reach it.
func (n *Node) RegisterValidator(topic string, v Validator) error {
	return n.RegisterRecordValidator(topic, NoRecord(v))
}

// RegisterRecordValidator is RegisterValidator for a validator that hands
// on the record it opened: subscribers get it as Message.Record.
func (n *Node) RegisterRecordValidator(topic string, v RecordValidator) error {
	if !n.cfg.allowed(topic) {
		return fmt.Errorf("p2p: validator for %q: %w", topic, ErrTopicNotAllowed)
	}
	v = n.guard.GuardValidator(n.host.ID(), v)
	counted := func(ctx context.Context, from peer.ID, m *pubsub.Message) pubsub.ValidationResult {
		verdict, rec := v(ctx, from, gossipSigner(m), m.GetData())
		n.metrics.validated(topic, verdict)
		switch verdict {
		case Accept:
			// Delivered to our subscriptions with the message: gossipsub
			// keeps a validator's data on the message it accepts.
			m.ValidatorData = rec
			return pubsub.ValidationAccept
		case Reject:
			return pubsub.ValidationReject
		default:
			return pubsub.ValidationIgnore
		}
	}
	if err := n.ps.RegisterTopicValidator(topic, counted); err != nil {
		return fmt.Errorf("p2p: register validator for %q: %w", topic, err)
	}
	return nil
}

// Subscribe subscribes to a topic and delivers messages to fn, one at a
// time, until ctx ends. It returns once the subscription is live. fn must
// not block for long: a full buffer drops messages. A topic joined after
// start is left once its last subscription ends (topic_leave.go).
func (n *Node) Subscribe(ctx context.Context, topic string, fn func(Message)) error {
	sub, err := n.subscribe(topic)
	if err != nil {
		return err
	}
	go func() {
		defer n.unsubscribe(sub)
		for {
			m, err := sub.Next(ctx)
			if err != nil {
				return
			}
			n.metrics.received(topic)
			fn(Message{Topic: topic, From: gossipSigner(m), ReceivedFrom: m.ReceivedFrom, Data: m.GetData(), Record: m.ValidatorData})
		}
	}()
	return nil
}

// Publish signs and floods data on a topic. With minPeers > 0 it first
// waits (bounded by ctx) until that many connected peers subscribe to the
// topic. Flood publishing sends to all of them, so this is the right
// readiness for publishers outside the mesh too (renters publish RFQs
// without subscribing; gossipsub's own readiness counts mesh peers only and
// would never be satisfied for them).
func (n *Node) Publish(ctx context.Context, topic string, data []byte, minPeers int) error {
	t, err := n.topicToPublish(topic)
	if err != nil {
		return err
	}
	if len(data) > n.maxPayload() {
		return fmt.Errorf("p2p: publish on %q: %d bytes: %w (limit %d)", topic, len(data), ErrMessageTooLarge, n.maxPayload())
	}
	if minPeers > 0 {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var lastLookup time.Time
		// Counted by name: a handle left meanwhile (topic_leave.go) lists
		// no peers, and the publish below joins the topic again.
		for len(n.ps.ListPeers(topic)) < minPeers {
			// Publishers outside the mesh get no help from gossipsub's
			// discovery; look the topic's subscribers up in the DHT.
			if time.Since(lastLookup) > 2*time.Second {
				lastLookup = time.Now()
				go n.connectTopicPeers(ctx, topic, minPeers)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("p2p: publish on %q: waiting for %d topic peers (have %d): %w", topic, minPeers, len(n.ps.ListPeers(topic)), ctx.Err())
			case <-tick.C:
			}
		}
	}
	err = t.Publish(ctx, data)
	if errors.Is(err, pubsub.ErrTopicClosed) {
		// Its last subscription ended and the topic was left meanwhile
		// (topic_leave.go): join it again.
		if t, err = n.topicToPublish(topic); err == nil {
			err = t.Publish(ctx, data)
		}
	}
	if err != nil {
		return fmt.Errorf("p2p: publish on %q: %w", topic, err)
	}
	n.metrics.published(topic)
	return nil
}

// ErrMessageTooLarge is returned when a payload exceeds the gossip limit.
var ErrMessageTooLarge = errors.New("message too large for gossip")

// envelopeOverhead is room for the signed gossip envelope around a payload
// (sender, sequence number, topic, signature, public key, framing).
const envelopeOverhead = 1 << 10

func (n *Node) maxPayload() int { return n.cfg.MaxMessageSize - envelopeOverhead }

// connectTopicPeers finds subscribers of a topic through the DHT, under
// the key gossipsub's discovery announces (the topic's rendezvous), and
// dials up to want of them.
func (n *Node) connectTopicPeers(ctx context.Context, topic string, want int) {
	if n.topicDisc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	peers, err := n.topicDisc.FindPeers(ctx, rendezvousPrefix+topic)
	if err != nil {
		n.log.Debug("find topic peers", "topic", topic, "err", err)
		return
	}
	dialed := 0
	for ai := range peers {
		if ai.ID == n.host.ID() || n.connected(ai.ID) {
			continue
		}
		if err := n.host.Connect(ctx, ai); err != nil {
			continue
		}
		if dialed++; dialed >= want {
			return
		}
	}
}

// TopicPeers returns, per allowed topic, the connected peers subscribed to
// it (not only mesh peers).
func (n *Node) TopicPeers() map[string]int {
	out := make(map[string]int, len(n.cfg.Topics))
	for _, t := range n.cfg.Topics {
		out[t] = len(n.ps.ListPeers(t))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for t := range n.topics {
		out[t] = len(n.ps.ListPeers(t))
	}
	return out
}

// JoinedTopics lists the topics this node joined.
func (n *Node) JoinedTopics() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.topics))
	for t := range n.topics {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ListTopicPeers returns the connected peers subscribed to a topic.
func (n *Node) ListTopicPeers(topic string) []peer.ID { return n.ps.ListPeers(topic) }
