package p2p

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
)

// Protocol identifiers. They keep idlegrid off the public IPFS network:
// a node speaking /ipfs/kad or /meshsub never meets ours.
const (
	// DHTPrefix is the Kademlia protocol prefix (-> /idlegrid/kad/1.0.0).
	DHTPrefix protocol.ID = "/idlegrid"
	// DHTProtocol is the full Kademlia protocol ID that DHTPrefix yields.
	DHTProtocol protocol.ID = DHTPrefix + "/kad/1.0.0"
	// GossipProtocol is the private gossipsub v1.2 protocol ID.
	GossipProtocol protocol.ID = "/idlegrid/meshsub/1.2.0"
)

// Gossip topics. Only these may be joined or subscribed to: the
// subscription filter drops every other topic a peer announces.
const (
	TopicRFQ    = "idlegrid/rfq/1"
	TopicAttest = "idlegrid/attest/1"
	TopicFraud  = "idlegrid/fraud/1"
)

// AllTopics lists the topic allowlist.
var AllTopics = []string{TopicRFQ, TopicAttest, TopicFraud}

// Config describes one libp2p node. The node package maps a role onto it;
// p2p itself knows nothing about roles or markets, only knobs.
type Config struct {
	// Identity is the node's Ed25519 key; its peer ID names the node.
	Identity crypto.PrivKey
	// ListenAddrs are the TCP and QUIC-v1 addresses to listen on.
	ListenAddrs []ma.Multiaddr
	// AnnounceAddrs, when set, replace the addresses advertised to peers
	// (datacenter hosts with a known public address).
	AnnounceAddrs []ma.Multiaddr
	// Bootstrap peers are dialed first, kept connected, and seed the DHT.
	Bootstrap []peer.AddrInfo

	// DHTServer answers DHT queries (providers, bootstrap); otherwise client.
	DHTServer bool
	// Bootstrapper turns on the relay v2 service, forces public
	// reachability, turns on gossip peer exchange and sets mesh degree 0.
	Bootstrapper bool
	// NATTraversal turns on UPnP/NAT-PMP port mapping, hole punching,
	// AutoNAT v2 and auto-relay through relays learnt from bootstrap peers.
	NATTraversal bool
	// Relay sizes the relay service of a Bootstrapper (nat.go).
	Relay RelayConfig

	// ConnLow and ConnHigh are the connection manager water marks.
	ConnLow, ConnHigh int
	// ConnGrace protects new connections from trimming.
	ConnGrace time.Duration
	// ResourceMemory and ResourceFDs size the resource manager explicitly
	// (never AutoScale, which grants each host 1/8 of RAM).
	ResourceMemory int64
	ResourceFDs    int

	// Topics the node may use; defaults to AllTopics.
	Topics []string
	// TopicPolicy admits further topics by name (families of sharded
	// topics whose names are not known in advance); nil admits none. A
	// peer's subscriptions to other topics are dropped.
	TopicPolicy func(topic string) bool
	// TopicRendezvous says under which topic's DHT key the subscribers of
	// topic are looked up (find) and which topic's key joining it
	// announces (announce; "" announces nothing). Topics that share their
	// subscribers share one key, so a node joining three topics of one
	// shard makes one announcement and one lookup, not three of each.
	// Nil: every topic is its own key, announced by every subscriber.
	TopicRendezvous func(topic string) (find, announce string)
	// MaxTopics bounds the topics a peer may announce and this node may
	// join (0: 160).
	MaxTopics int
	// MaxMessageSize caps one gossip message.
	MaxMessageSize int
	// GossipHeartbeat is the gossipsub heartbeat interval.
	GossipHeartbeat time.Duration
	// PresenceTopic is a topic every well-behaved peer subscribes to; a
	// connected gossip peer missing from it for GossipHealGrace is
	// reconnected (gossip_heal.go). Empty turns the check off.
	PresenceTopic   string
	GossipHealGrace time.Duration
	// AppScore feeds gossipsub's application-specific score (reputation
	// later); bootstrap peers get a fixed bonus on top. May be nil.
	AppScore func(peer.ID) float64

	// ReconnectMin and ReconnectMax bound the redial backoff.
	ReconnectMin, ReconnectMax time.Duration
	// MinPeers: below this many connected idlegrid peers the node redials
	// known peers, not only bootstrap peers.
	MinPeers int

	// ConnsPerIP and ConnsPerSubnet cap the connections from one IPv4
	// address and one /24 (IPv6: one /56 and one /48) in the resource
	// manager; loopback and bootstrap addresses are exempt.
	ConnsPerIP, ConnsPerSubnet int
	// Admission keeps inbound room for newcomers during a flood.
	Admission AdmissionConfig
	// Guard tunes the abuse guard (points, decay, bans, rate limits).
	Guard GuardConfig

	// DHTOptions are appended to the node's own (record validators). The
	// node sets dht.OnRequestHook itself, after these, to charge senders
	// of invalid records.
	DHTOptions []dht.Option
	// UserAgent is announced through identify.
	UserAgent string
}

// Deps are the node's collaborators.
type Deps struct {
	// Host, when set, is used instead of building one (mocknet in tests).
	// The node takes ownership and closes it.
	Host host.Host
	// PeerBook persists known peers across restarts. May be nil.
	PeerBook PeerBook
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the node's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Blocklist gates connections; nil creates one. An injected Host must
	// have been built with it as its connection gater for blocking to
	// refuse new connections (Block closes existing ones either way).
	Blocklist *Blocklist
	// Bans persists the abuse guard's bans across restarts. May be nil.
	Bans BanStore
	// Transports, when set, replace the host's TCP and QUIC transports and
	// its Noise and TLS security (tests put hundreds of nodes on one
	// in-process network with them: p2p/p2ptest/memnet). Ignored with Host.
	Transports []libp2p.Option
}

// PeerBook is durable memory of peers met, so that a restarted node does
// not depend on one bootstrap peer to find the network again.
type PeerBook interface {
	SavePeer(info peer.AddrInfo, seen time.Time) error
	KnownPeers(limit int) ([]peer.AddrInfo, error)
}

// DefaultConfig returns a Config with every knob at its production default.
// Identity and addresses are left empty.
func DefaultConfig() Config {
	return Config{
		ConnLow:         64,
		ConnHigh:        192,
		ConnGrace:       time.Minute,
		ResourceMemory:  512 << 20,
		ResourceFDs:     4096,
		ConnsPerIP:      8,
		ConnsPerSubnet:  32,
		Guard:           DefaultGuardConfig(),
		Topics:          AllTopics,
		MaxMessageSize:  256 << 10,
		GossipHeartbeat: time.Second,
		GossipHealGrace: 5 * time.Second,
		ReconnectMin:    time.Second,
		ReconnectMax:    time.Minute,
		MinPeers:        8,
		UserAgent:       "idlegrid",
		Relay:           DefaultRelayConfig(),
	}
}

func (c *Config) validate(hasHost bool) error {
	var errs []error
	if c.Identity == nil && !hasHost {
		errs = append(errs, errors.New("identity key is required"))
	}
	if c.Identity != nil && c.Identity.Type() != crypto.Ed25519 {
		errs = append(errs, fmt.Errorf("identity key must be Ed25519, got %s", c.Identity.Type()))
	}
	if c.ConnLow <= 0 || c.ConnHigh < c.ConnLow {
		errs = append(errs, fmt.Errorf("connection water marks low=%d high=%d: need 0 < low <= high", c.ConnLow, c.ConnHigh))
	}
	if c.ConnsPerIP < 0 || c.ConnsPerSubnet < 0 {
		errs = append(errs, fmt.Errorf("connections per ip %d, per subnet %d: must not be negative", c.ConnsPerIP, c.ConnsPerSubnet))
	}
	if c.MaxMessageSize < 1<<10 || c.MaxMessageSize > 4<<20 {
		errs = append(errs, fmt.Errorf("max message size %d: must be within 1 KiB..4 MiB", c.MaxMessageSize))
	}
	if c.GossipHeartbeat < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("gossip heartbeat %s is too short", c.GossipHeartbeat))
	}
	if c.PresenceTopic != "" && c.GossipHealGrace < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("gossip heal grace %s is too short: peers need time to announce their subscriptions", c.GossipHealGrace))
	}
	if c.ReconnectMin <= 0 || c.ReconnectMax < c.ReconnectMin {
		errs = append(errs, fmt.Errorf("reconnect backoff min=%s max=%s: need 0 < min <= max", c.ReconnectMin, c.ReconnectMax))
	}
	if err := c.Relay.Validate(); err != nil {
		errs = append(errs, err)
	}
	allowed := map[string]bool{}
	for _, t := range AllTopics {
		allowed[t] = true
	}
	for _, t := range c.Topics {
		if !allowed[t] {
			errs = append(errs, fmt.Errorf("topic %q is not in the allowlist %v", t, AllTopics))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("p2p config: %w", err)
	}
	return nil
}

// allowed reports whether the node may use a topic.
func (c *Config) allowed(topic string) bool {
	return slices.Contains(c.Topics, topic) || (c.TopicPolicy != nil && c.TopicPolicy(topic))
}

// defaultMaxTopics bounds joined and announced topics when MaxTopics is 0.
const defaultMaxTopics = 256

func (c *Config) maxTopics() int {
	if c.MaxTopics > 0 {
		return c.MaxTopics
	}
	return defaultMaxTopics
}
