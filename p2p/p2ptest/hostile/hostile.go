// Package hostile is an adversarial idlegrid peer for tests: a real libp2p
// host (loopback TCP, Noise, yamux, or any host the test hands it, such as
// a mocknet peer) that speaks idlegrid's private gossip and DHT protocols
// and abuses them the way a throw-away identity would: garbage, oversized
// and replayed gossip signed by itself, valid gossip signed by any number
// of other keys that never connect (PublishAs: a sybil army behind one
// connection), forged DHT record PUTs, idle, garbage and slowloris
// streams on any protocol, request/response servers that lie
// (ServeRequests), and connection floods from fresh identities (flood.go).
//
// It knows no market types. Callers that need realistic payloads (stale
// or future RFQs, forged renters) build the bytes and hand them over.
package hostile

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/p2p"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// Attacker is one hostile identity with its own host and gossipsub.
type Attacker struct {
	host   host.Host
	ps     *pubsub.PubSub
	cancel context.CancelFunc

	mu     sync.Mutex
	topics map[string]*pubsub.Topic

	closeOnce sync.Once
	closeErr  error
}

// newHost is a minimal client host with a fresh identity: no listener, no
// resource limits of its own (the attacker ignores its own safety).
func newHost(listen bool) (host.Host, error) {
	sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("hostile: key: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(sk),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableMetrics(),
		libp2p.DisableRelay(),
		libp2p.UserAgent("hostile"),
	}
	if listen {
		opts = append(opts, libp2p.ListenAddrs(ma.StringCast("/ip4/127.0.0.1/tcp/0")))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("hostile: libp2p.New: %w", err)
	}
	return h, nil
}

// New builds an attacker on a fresh loopback TCP host. Its gossipsub
// speaks idlegrid's protocol ID, signs every message with its own key
// (PublishAs signs with another), accepts messages up to 8 MiB (so it can
// send oversized ones) and publishes to every topic peer.
func New() (*Attacker, error) {
	h, err := newHost(true)
	if err != nil {
		return nil, err
	}
	return NewOn(h)
}

// NewOn builds an attacker on h (a mocknet peer, say, with an address of
// the test's choosing); it closes h when it is closed or fails.
func NewOn(h host.Host) (*Attacker, error) {
	ctx, cancel := context.WithCancel(context.Background())
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithGossipSubProtocols([]protocol.ID{p2p.GossipProtocol}, func(pubsub.GossipSubFeature, protocol.ID) bool { return true }),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithMaxMessageSize(8<<20),
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerOutboundQueueSize(4096),
		pubsub.WithValidateQueueSize(4096),
	)
	if err != nil {
		cancel()
		_ = h.Close()
		return nil, fmt.Errorf("hostile: gossipsub: %w", err)
	}
	return &Attacker{host: h, ps: ps, cancel: cancel, topics: map[string]*pubsub.Topic{}}, nil
}

// ID is the attacker's peer ID.
func (a *Attacker) ID() peer.ID { return a.host.ID() }

// Host is the attacker's libp2p host.
func (a *Attacker) Host() host.Host { return a.host }

// Close stops gossipsub and the host. It is idempotent.
func (a *Attacker) Close() error {
	a.closeOnce.Do(func() {
		a.cancel()
		a.closeErr = a.host.Close()
	})
	return a.closeErr
}

// Connect dials target.
func (a *Attacker) Connect(ctx context.Context, target peer.AddrInfo) error {
	if err := a.host.Connect(ctx, target); err != nil {
		return fmt.Errorf("hostile: connect %s: %w", target.ID, err)
	}
	return nil
}

// Connected reports whether the attacker has a connection to p.
func (a *Attacker) Connected(p peer.ID) bool {
	return a.host.Network().Connectedness(p) == network.Connected
}

func (a *Attacker) topic(name string) (*pubsub.Topic, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.topics[name]; ok {
		return t, nil
	}
	t, err := a.ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("hostile: join %q: %w", name, err)
	}
	a.topics[name] = t
	return t, nil
}

// WaitTopicPeer waits until p is known to subscribe to topic, so that
// publications reach it.
func (a *Attacker) WaitTopicPeer(ctx context.Context, topic string, p peer.ID) error {
	t, err := a.topic(topic)
	if err != nil {
		return err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, q := range t.ListPeers() {
			if q == p {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hostile: wait for %s on %q: %w", p, topic, ctx.Err())
		case <-tick.C:
		}
	}
}

// Publish signs data as the attacker and sends it to every topic peer.
func (a *Attacker) Publish(ctx context.Context, topic string, data []byte) error {
	t, err := a.topic(topic)
	if err != nil {
		return err
	}
	if err := t.Publish(ctx, data); err != nil {
		return fmt.Errorf("hostile: publish on %q: %w", topic, err)
	}
	return nil
}

// PublishAs sends data on topic signed by key, as if its owner had
// published it and the attacker only passed it on: one connection
// carrying the messages of any number of identities that never connect.
func (a *Attacker) PublishAs(ctx context.Context, topic string, key crypto.PrivKey, data []byte) error {
	t, err := a.topic(topic)
	if err != nil {
		return err
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return fmt.Errorf("hostile: publish as: %w", err)
	}
	if err := t.Publish(ctx, data, pubsub.WithSecretKeyAndPeerId(key, id)); err != nil {
		return fmt.Errorf("hostile: publish on %q as %s: %w", topic, id, err)
	}
	return nil
}

// Spam publishes n messages built by gen (gen(i) for the i-th) at about
// perSecond (0: as fast as possible). It stops early when ctx ends or
// stop returns true (checked before each message) and returns how many
// it sent.
func (a *Attacker) Spam(ctx context.Context, topic string, n int, perSecond float64, gen func(i int) []byte, stop func() bool) (int, error) {
	var tick <-chan time.Time
	if perSecond > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
		defer t.Stop()
		tick = t.C
	}
	for i := range n {
		if stop != nil && stop() {
			return i, nil
		}
		if tick != nil {
			select {
			case <-ctx.Done():
				return i, ctx.Err()
			case <-tick:
			}
		}
		if err := a.Publish(ctx, topic, gen(i)); err != nil {
			return i, err
		}
	}
	return n, nil
}

// Garbage returns a generator of distinct random payloads of size bytes.
func Garbage(size int) func(i int) []byte {
	return func(int) []byte {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		return b
	}
}

// Prefixed returns a generator of distinct payloads that start with
// prefix (a test validator's cue) followed by the index and padding.
func Prefixed(prefix string, size int) func(i int) []byte {
	return func(i int) []byte {
		b := fmt.Appendf(nil, "%s%d:", prefix, i)
		for len(b) < size {
			b = append(b, '.')
		}
		return b
	}
}

// Same returns a generator that replays data every time.
func Same(data []byte) func(int) []byte { return func(int) []byte { return data } }

// ErrRefused is returned by stream attacks the target refused outright.
var ErrRefused = errors.New("hostile: refused by target")
