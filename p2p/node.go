// Package p2p is idlegrid's libp2p layer: one host (TCP and QUIC-v1, Noise
// and TLS, yamux, explicit connection and resource managers), a private
// Kademlia DHT under the /idlegrid prefix, gossipsub on private protocol IDs
// with a topic allowlist, signed messages and content-hash IDs, size-limited
// stream helpers, and a reconnect loop that heals the network after
// restarts.
//
// p2p moves bytes. It knows no market types: validators receive raw
// payloads and the node package decides what they mean.
package p2p

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
	ma "github.com/multiformats/go-multiaddr"
)

// ErrClosed is returned by operations on a closed node.
var ErrClosed = errors.New("p2p node is closed")

// ErrNotRoutable is returned by WaitReady when ctx ends before the routing
// table holds a peer: the node reached no bootstrap peer (or has none).
var ErrNotRoutable = errors.New("no peer in the routing table")

// Node is a running libp2p node: host, DHT and gossipsub.
type Node struct {
	cfg  Config
	log  *slog.Logger
	host host.Host
	// closes remembers why this node closes each connection (metrics).
	closes *closeReasons
	// pings is what the liveness watch hears of the peers: their pings of
	// this node and their gossip.
	pings *pingsSeen
	// muxer counts yamux's reports of failed connections (metrics).
	muxer *muxerFailures
	// blocklist gates connections (fraudulent peers).
	blocklist *Blocklist
	// scores are the peers' gossipsub scores, refreshed every second.
	scoresMu sync.Mutex
	scores   map[peer.ID]float64
	dht      *dht.IpfsDHT
	ps       *pubsub.PubSub
	book     PeerBook
	metrics  *metrics
	started  time.Time
	// punches keeps the latest hole-punch outcome per peer.
	punches *punchLog

	// The abuse guard and what it drives: bans (persisted through bans),
	// inbound stream caps, inbound admission, and the protected test.
	guard     *Guard
	bans      BanStore
	streams   *streamGate
	admit     *admission
	protected atomic.Pointer[func(peer.ID) bool]

	routing *drouting.RoutingDiscovery
	// topicDisc finds topic subscribers; nil on bootstrap peers, which
	// join no topic.
	topicDisc *topicDiscovery
	psCtx     context.Context
	psCancel  context.CancelFunc
	boot      map[peer.ID]bool

	mu     sync.Mutex
	topics map[string]*pubsub.Topic
	// subs counts each topic's live subscriptions: a topic joined after
	// start is left when its last one ends (topic_leave.go).
	subs map[string]int
	// published is when each topic joined after start was last published
	// on, for makeTopicRoomLocked.
	published map[string]time.Time
	joined    joinedTopics // the topics' names, for the gossip tracer
	mesh      meshView     // the gossip mesh, as the tracer saw it
	// validatorFor makes the validators of policy-admitted topics.
	validatorFor func(topic string) RecordValidator
	// entry is the entry check gossip messages pass before gossipsub
	// remembers them (gossip_entry.go).
	entry  *entryChecks
	closed bool

	// heal is the gossip heal loop's state (gossip_heal.go).
	heal healState

	// running: Run has subscribed to identify failures, so the DHT may
	// dial the bootstrap peers (bootstrapPeers).
	running atomic.Bool

	// Reconnect-loop state: lostConn is set by the network when a
	// connection closes; hadEnough and countedAt belong to the loop.
	lostConn  atomic.Bool
	hadEnough bool
	countedAt time.Time

	closeOnce sync.Once
	closeErr  error
	// hostCloseWait is hostCloseWait (a test's shorter).
	hostCloseWait time.Duration
}

// ErrHostCloseStalled: libp2p's host did not finish closing in time.
var ErrHostCloseStalled = errors.New("the libp2p host did not finish closing in time")

// hostCloseWait bounds the wait for the libp2p host's Close (see Close).
const hostCloseWait = 15 * time.Second

// New builds the host (unless deps.Host is given), the DHT and gossipsub.
// On error everything already built is torn down again.
func New(cfg Config, deps Deps) (_ *Node, err error) {
	if err := cfg.validate(deps.Host != nil); err != nil {
		return nil, err
	}
	if len(cfg.Topics) == 0 {
		cfg.Topics = AllTopics
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		cfg:       cfg,
		log:       logger,
		book:      deps.PeerBook,
		started:   time.Now(),
		boot:      make(map[peer.ID]bool, len(cfg.Bootstrap)),
		entry:     newEntryChecks(),
		topics:    make(map[string]*pubsub.Topic),
		subs:      make(map[string]int),
		published: make(map[string]time.Time),
	}
	for _, b := range cfg.Bootstrap {
		n.boot[b.ID] = true
	}
	var undo []func() error
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				_ = undo[i]()
			}
		}
	}()

	n.blocklist = deps.Blocklist
	if n.blocklist == nil {
		n.blocklist = NewBlocklist()
	}
	// Metrics come first (registered at the end) so that everything built
	// below can count.
	n.metrics = newMetrics(n)
	n.closes = newCloseReasons()
	n.muxer = &muxerFailures{count: n.metrics.muxerFailed}
	n.punches = newPunchLog(logger, n.metrics.holePunched)
	if err := n.setupGuard(deps.Bans); err != nil {
		return nil, err
	}
	n.host = deps.Host
	rcmgrKeep := 0
	if n.host == nil {
		n.host, rcmgrKeep, err = newHost(&n.cfg, deps.Transports, n.closes, n.muxer, deps.Registerer, n.blocklist, relayPeerSource(cfg.Bootstrap, func() host.Host { return n.host }), n.punches)
		if err != nil {
			return nil, err
		}
	}
	undo = append(undo, n.host.Close)
	n.pings = newPingsSeen()
	n.host.SetStreamHandler(ping.ID, n.answerPing)
	for _, b := range cfg.Bootstrap {
		n.host.Peerstore().AddAddrs(b.ID, b.Addrs, time.Hour)
	}
	if limit := admissionMax(&n.cfg, rcmgrKeep); limit > 0 {
		n.admit = newAdmission(limit, cfg.Admission.Subnet, n.isProtected, n.connValue, func(c network.Conn, crowded bool) {
			if crowded {
				n.metrics.connRefused(RefusedCrowdedSubnet)
			} else {
				n.metrics.connRefused(RefusedOverCap)
			}
			n.closeConn(c, ClosedAdmission)
		})
	}
	n.watchConns()

	mode := dht.ModeClient
	if cfg.DHTServer {
		mode = dht.ModeServer
	}
	dopts := append([]dht.Option{
		dht.ProtocolPrefix(DHTPrefix),
		dht.Mode(mode),
		dht.BootstrapPeersFunc(n.bootstrapPeers),
	}, cfg.DHTOptions...)
	dopts = append(dopts, dht.OnRequestHook(n.dhtRequestHook))
	n.dht, err = dht.New(n.host, dopts...)
	if err != nil {
		return nil, fmt.Errorf("p2p: dht.New: %w", err)
	}
	undo = append(undo, n.dht.Close)

	psCtx, cancel := context.WithCancel(context.Background())
	n.psCtx, n.psCancel = psCtx, cancel
	undo = append(undo, func() error { cancel(); return nil })
	// Topic peers are found through the DHT (provider records under the
	// topic name). Bootstrap peers join no topic and need none.
	n.routing = drouting.NewRoutingDiscovery(n.dht)
	var disc discovery.Discovery
	if !cfg.Bootstrapper {
		n.topicDisc = newTopicDiscovery(n.routing, func(topic string) bool { return slices.Contains(n.cfg.Topics, topic) }, cfg.TopicRendezvous)
		disc = n.topicDisc
	}
	n.ps, err = newPubSub(psCtx, n.host, &n.cfg, disc, n.isBootstrap, (&scoreWatch{log: n.log, set: n.setScores, explained: map[peer.ID]time.Time{}}).inspect,
		gossipGuard{guard: n.guard, blocklist: n.blocklist, graylisted: n.isGraylisted, throttled: n.metrics.throttled, admit: n.entryAdmit}, newGossipTrace(n))
	if err != nil {
		return nil, err
	}
	if err := n.metrics.register(deps.Registerer); err != nil {
		return nil, err
	}
	return n, nil
}

// Host is the libp2p host.
func (n *Node) Host() host.Host { return n.host }

func (n *Node) setScores(s map[peer.ID]float64) {
	n.scoresMu.Lock()
	n.scores = s
	n.scoresMu.Unlock()
}

// GossipScore is a peer's gossipsub score as this node last computed it
// (0 for a peer it does not score). Invalid messages lower it.
func (n *Node) GossipScore(p peer.ID) float64 {
	n.scoresMu.Lock()
	defer n.scoresMu.Unlock()
	return n.scores[p]
}

// DHT is the Kademlia DHT.
func (n *Node) DHT() *dht.IpfsDHT { return n.dht }

// ID is this node's peer ID.
func (n *Node) ID() peer.ID { return n.host.ID() }

func (n *Node) isBootstrap(p peer.ID) bool { return n.boot[p] }

// bootstrapPeers seeds the DHT: configured bootstrap peers first, then
// peers remembered from earlier runs.
//
// It lists none until Run has begun: the DHT dials what it lists as soon
// as it is built, and a failed identify on that first connection, the one
// the repair is for most, came before Run subscribed to the failures and
// was never seen (a loaded test run lost 1 in 800 this way). Run's
// reconnect loop dials the bootstrap peers at once instead.
func (n *Node) bootstrapPeers() []peer.AddrInfo {
	if !n.running.Load() {
		return nil
	}
	out := slices.Clone(n.cfg.Bootstrap)
	if n.book != nil {
		known, err := n.book.KnownPeers(32)
		if err != nil {
			n.log.Warn("read known peers", "err", err)
		}
		for _, k := range known {
			if !n.boot[k.ID] && k.ID != n.host.ID() {
				out = append(out, k)
			}
		}
	}
	return out
}

// Run runs the node's loops (reconnect, peer book, protection, gossip
// heal, reachability log, failed identify) until ctx ends.
func (n *Node) Run(ctx context.Context) error {
	// Subscribed before any loop dials: the failure the repair is for
	// most is on the first connection, a newcomer's to its bootstrap
	// peer, and one emitted before the subscription is never seen (a
	// loaded CI run missed one this way).
	failed, err := n.host.EventBus().Subscribe(new(event.EvtPeerIdentificationFailed))
	if err != nil {
		return fmt.Errorf("p2p: subscribe to identify failures: %w", err)
	}
	n.running.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { n.recordPeers(ctx) })
	wg.Go(func() { n.reconnectLoop(ctx) })
	wg.Go(func() { n.protectLoop(ctx) })
	wg.Go(func() { n.healGossipLoop(ctx) })
	wg.Go(func() { n.watchReachability(ctx) })
	wg.Go(func() { n.watchLiveness(ctx) })
	wg.Go(func() { n.redoFailedIdentify(ctx, failed) })
	wg.Wait()
	return nil
}

// Close stops gossipsub, the DHT, the network and the host, in that
// order. It is idempotent.
//
// The network closes before the host so that no identify message is
// handled once the host's Close has begun. That Close first stops
// libp2p's observed-address manager, whose loop then returns without
// closing its identify subscription (go-libp2p v0.52.0); identify
// messages handled after that filled the subscription, and the next one
// blocked forever holding the event bus's lock for the event, which the
// host's AutoNAT Close then waited on. At 150 nodes on two cores, where a
// closing node receives identify pushes from its closing peers, 6 or 7
// members never stopped (docs/benchmarks.md, issue 26).
//
// Another path into that stall remains (an identify handler already
// running when the network closed, seen once at 200 nodes), so the wait
// for the host is bounded (hostCloseWait): past it Close reports
// ErrHostCloseStalled and returns, leaving the host's goroutines behind,
// so that the node's store still closes cleanly and the process exits.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		for name, t := range n.topics {
			_ = t.Close()
			delete(n.topics, name)
		}
		n.mu.Unlock()
		n.psCancel()
		var errs []error
		if err := n.dht.Close(); err != nil {
			errs = append(errs, fmt.Errorf("dht close: %w", err))
		}
		if err := n.host.Network().Close(); err != nil {
			errs = append(errs, fmt.Errorf("network close: %w", err))
		}
		if err := n.closeHost(); err != nil {
			errs = append(errs, fmt.Errorf("host close: %w", err))
		}
		n.metrics.unregister()
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// closeHost closes the host, waiting at most hostCloseWait.
func (n *Node) closeHost() error {
	done := make(chan error, 1)
	go func() { done <- n.host.Close() }()
	wait := cmp.Or(n.hostCloseWait, hostCloseWait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		n.log.Error("the libp2p host did not finish closing; going on without it", "waited", wait)
		return ErrHostCloseStalled
	}
}

// Uptime is how long ago the node was built.
func (n *Node) Uptime() time.Duration { return time.Since(n.started) }

// ListenAddrs are the addresses the host listens on, resolved to
// interfaces (0.0.0.0 expanded, port 0 replaced).
func (n *Node) ListenAddrs() []ma.Multiaddr {
	addrs, err := n.host.Network().InterfaceListenAddresses()
	if err != nil {
		addrs = n.host.Network().ListenAddresses()
	}
	// The relay transport "listens" on /p2p-circuit; that is not an
	// address anyone can dial us on directly.
	return slices.DeleteFunc(addrs, func(a ma.Multiaddr) bool {
		_, err := a.ValueForProtocol(ma.P_CIRCUIT)
		return err == nil
	})
}

// AdvertisedAddrs are the addresses the node tells peers to dial: the
// announce addresses when configured, else the detected ones (relay
// circuit addresses excluded).
func (n *Node) AdvertisedAddrs() []ma.Multiaddr {
	return slices.DeleteFunc(slices.Clone(n.host.Addrs()), func(a ma.Multiaddr) bool {
		_, err := a.ValueForProtocol(ma.P_CIRCUIT)
		return err == nil
	})
}

// ObservedAddrs are announced addresses that are not our own listen
// addresses: what peers see of us (NAT mappings, observed public IPs).
func (n *Node) ObservedAddrs() []ma.Multiaddr {
	listen := n.ListenAddrs()
	var out []ma.Multiaddr
	for _, a := range n.host.Addrs() {
		if !slices.ContainsFunc(listen, a.Equal) {
			out = append(out, a)
		}
	}
	return out
}

// RoutingTableSize is the number of peers in the DHT routing table.
func (n *Node) RoutingTableSize() int { return n.dht.RoutingTable().Size() }

// ConnectedPeers lists peers with at least one open connection.
func (n *Node) ConnectedPeers() []peer.ID { return n.host.Network().Peers() }

// PeerInfo describes one connected peer.
type PeerInfo struct {
	ID        peer.ID
	Addrs     []ma.Multiaddr
	Direction network.Direction
	Latency   time.Duration
	Agent     string
	Bootstrap bool
	Protocols []string
	// Path is "direct", or how the peer is relayed and why no direct
	// connection came up (pathOf).
	Path string
}

// Peers describes every connected peer.
func (n *Node) Peers() []PeerInfo {
	ps := n.host.Peerstore()
	var out []PeerInfo
	for _, p := range n.host.Network().Peers() {
		pi := PeerInfo{ID: p, Latency: ps.LatencyEWMA(p), Bootstrap: n.boot[p], Path: n.pathOf(p)}
		for _, c := range n.host.Network().ConnsToPeer(p) {
			pi.Addrs = append(pi.Addrs, c.RemoteMultiaddr())
			pi.Direction = c.Stat().Direction
		}
		if v, err := ps.Get(p, agentVersionKey); err == nil {
			pi.Agent, _ = v.(string)
		}
		if protos, err := ps.GetProtocols(p); err == nil {
			for _, pr := range protos {
				pi.Protocols = append(pi.Protocols, string(pr))
			}
			slices.Sort(pi.Protocols)
		}
		out = append(out, pi)
	}
	slices.SortFunc(out, func(a, b PeerInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
