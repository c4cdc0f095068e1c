// Package node wires one idlegrid node: it opens the store, builds the p2p
// layer for the node's role, registers gossip validators, serves the local
// API and supervises everything with a Run(ctx)/Close lifecycle. It holds no
// business rules; those live in auction and attest.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p-kad-dht/records"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/opsmetrics"
	"github.com/idlegrid/idlegrid/node/provider"
	"github.com/idlegrid/idlegrid/node/renter"
	"github.com/idlegrid/idlegrid/node/trust"
	"github.com/idlegrid/idlegrid/node/ui"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Deps are a node's collaborators. All are optional: the zero value builds
// a production node from cfg.Home.
type Deps struct {
	// Logger; nil discards.
	Logger *slog.Logger
	// Registry receives metrics and backs /metrics; nil creates one.
	Registry *prometheus.Registry
	// Host replaces the libp2p host (mocknet in tests); the node owns it.
	Host host.Host
	// Transports replace the host's TCP, QUIC, Noise and TLS when the node
	// builds its own host (p2p.Deps.Transports; memnet in scale tests).
	Transports []libp2p.Option
	// Store replaces the on-disk store (in-memory in tests); the node owns it.
	Store *store.DB
	// Identity replaces the key in cfg.Home.
	Identity crypto.PrivKey
	// Token replaces the API token in cfg.Home.
	Token string
	// GPU replaces the backend cfg.GPU selects (providers only); the node
	// owns it.
	GPU gpu.Backend
	// Executors replace the provider's built-in runtimes of the same name
	// (tests inject fakes); the node owns them.
	Executors []executor.Executor
	// WorkDir holds executor state, artifacts and results; empty: the
	// home, or a temporary directory when there is no home.
	WorkDir string
	// AdmitAward is the provider's award admission policy; nil admits all.
	AdmitAward provider.AdmitAward
	// WithholdPayment is the renter's payment policy: returning true for a
	// lease withholds its next voucher (a dispute, a budget cap). nil pays
	// whatever verified telemetry covers.
	WithholdPayment func(leaseID string) bool
	// ReplayExecutor replaces the embedded WASM runtime that re-runs the
	// jobs of wrong-result proofs (tests inject fakes).
	ReplayExecutor ReplayExecutor
	// LotsFor replaces the provider's lot count rule (auction.LotsFor):
	// tests split shards far smaller than a thousand providers.
	LotsFor func(prev, shardSize int) int
}

// Node is one running idlegrid node: the wiring of its rooms. A provider
// node has a provider room, a renter node a renter room; every node has
// trust.
type Node struct {
	cfg     Config
	log     *slog.Logger
	reg     *prometheus.Registry
	db      *store.DB
	p2p     *p2p.Node
	api     *api.Server
	started time.Time
	gossip  *api.GossipLog
	key     crypto.PrivKey
	gpus    gpu.Backend         // providers only; the node owns it
	ops     *opsmetrics.Metrics // providers only: what operators alert on
	// reload guards fileCfg: the config as loaded, with what reloads
	// applied (reload.go).
	reload  sync.Mutex
	fileCfg Config
	leases  *lease.Book
	parties *lease.Parties // peers of live leases, protected from trimming
	rfqGate *trust.RFQGate
	// workDir holds executor state, artifacts, results and downloads;
	// cleanupWork removes it when it is temporary.
	workDir     string
	cleanupWork func() error
	artifacts   *executor.DirArtifacts // modules a renter serves

	trust     *trust.Trust
	shardSubs shardSubscriptions
	lotSubs   lotSubscriptions
	rLots     renterLots
	// runCtx is Run's context, for topics followed later (a renter
	// follows the digest topic of each shard it learns of).
	runCtx   context.Context
	runCtxMu sync.Mutex
	provider *provider.Provider // providers only
	renter   *renter.Renter     // renters only

	closeOnce sync.Once
	closeErr  error
}

// New wires a node: store, then p2p, then API. If a step fails, the steps
// already done are undone in reverse order.
func New(cfg Config, deps Deps) (_ *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err // a *ConfigError: the key and what is wrong with it
	}
	n := &Node{cfg: cfg, fileCfg: cfg, log: deps.Logger, reg: deps.Registry, started: time.Now(), gossip: api.NewGossipLog(64)}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	if n.reg == nil {
		n.reg = prometheus.NewRegistry()
	}
	var undo []func() error
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				_ = undo[i]()
			}
		}
	}()

	n.db = deps.Store
	if n.db == nil {
		if cfg.Home == "" {
			return nil, errors.New("node.New: no home directory and no store given")
		}
		if n.db, err = store.Open(StorePath(cfg.Home), store.Options{Logger: n.log, LowSpaceMiB: int64(cfg.Store.LowSpaceMiB), Salvage: cfg.Store.Salvage}); err != nil {
			return nil, storeError(cfg.Home, err)
		}
	}
	undo = append(undo, n.db.Close)

	if n.key, err = identityKey(cfg, deps); err != nil {
		return nil, fmt.Errorf("node.New: %w", err)
	}
	pcfg, err := n.p2pConfig()
	if err != nil {
		return nil, fmt.Errorf("node.New: %w", err)
	}
	if n.p2p, err = p2p.New(pcfg, p2p.Deps{
		Host:       deps.Host,
		Transports: deps.Transports,
		PeerBook:   peerBook{n.db},
		Bans:       banStore{n.db},
		Logger:     n.log.With("component", "p2p"),
		Registerer: n.reg,
	}); err != nil {
		return nil, listenError("p2p.listen (--listen)", strings.Join(cfg.P2P.Listen, ", "), err)
	}
	undo = append(undo, n.p2p.Close)

	n.leases = lease.NewBook(n.db, time.Now)
	if err := n.protectLeaseParties(); err != nil {
		return nil, fmt.Errorf("node.New: %w", err)
	}
	dir, cleanup, err := workDir(cfg, deps)
	if err != nil {
		return nil, fmt.Errorf("node.New: work dir: %w", err)
	}
	undo = append(undo, cleanup)
	n.cleanupWork = cleanup
	n.workDir = dir
	artifacts, err := openArtifacts(dir)
	if err != nil {
		return nil, fmt.Errorf("node.New: %w", err)
	}
	n.artifacts = artifacts
	if err := n.buildRooms(deps, artifacts, &undo); err != nil {
		return nil, fmt.Errorf("node.New: %w", err)
	}
	n.route()
	if err := n.registerValidators(); err != nil {
		return nil, fmt.Errorf("node.New: %w", err)
	}

	if cfg.API.Listen != "" {
		token := deps.Token
		if token == "" {
			if token, err = LoadToken(cfg.Home); err != nil {
				return nil, fmt.Errorf("node.New: %w", err)
			}
		}
		dash, err := ui.New(apiBackend{n}, ui.Options{Token: token, Logger: n.log.With("component", "ui")})
		if err != nil {
			return nil, fmt.Errorf("node.New: %w", err)
		}
		if n.api, err = api.Listen(cfg.API.Listen, apiBackend{n}, api.Options{
			Token: token, Gatherer: n.reg, Debug: cfg.API.Debug, Logger: n.log.With("component", "api"), UI: dash,
		}); err != nil {
			return nil, listenError("api.listen (--api-listen)", cfg.API.Listen, err)
		}
		undo = append(undo, n.api.Close)
	}
	return n, nil
}

// identityKey is the node's signing key: given, the injected host's, or
// the one in the home.
func identityKey(cfg Config, deps Deps) (crypto.PrivKey, error) {
	switch {
	case deps.Identity != nil:
		return deps.Identity, nil
	case deps.Host != nil:
		if sk := deps.Host.Peerstore().PrivKey(deps.Host.ID()); sk != nil {
			return sk, nil
		}
		return nil, errors.New("injected host has no private key")
	default:
		return LoadIdentity(cfg.Home)
	}
}

// provideValidity is how long DHT nodes keep a provider announcement. It
// is a network-wide convention: providers re-announce every republish
// interval (10 min by default), so an hour survives a few missed rounds
// yet lets a vanished provider drop out of searches quickly.
const provideValidity = time.Hour

func (n *Node) p2pConfig() (p2p.Config, error) {
	c := p2p.DefaultConfig()
	c.Identity = n.key
	c.DHTOptions = []dht.Option{
		dht.NamespacedValidator(auction.CapacityNamespace, auction.NewCapacityValidator(time.Now)),
		dht.ProviderManagerOpts(records.ProvideValidity(provideValidity), records.CleanupInterval(5*time.Minute)),
	}
	var err error
	if c.ListenAddrs, err = parseAddrs(n.cfg.P2P.Listen); err != nil {
		return c, err
	}
	if c.AnnounceAddrs, err = parseAddrs(n.cfg.P2P.Announce); err != nil {
		return c, err
	}
	if c.Bootstrap, err = n.cfg.BootstrapPeers(); err != nil {
		return c, err
	}
	c.DHTServer = n.cfg.Role != RoleRenter
	c.Bootstrapper = n.cfg.Role == RoleBootstrap
	c.NATTraversal = n.cfg.P2P.NAT && n.cfg.Role != RoleBootstrap
	c.ConnLow, c.ConnHigh, c.ConnGrace = n.cfg.P2P.ConnLow, n.cfg.P2P.ConnHigh, n.cfg.P2P.ConnGrace
	c.ResourceMemory = int64(n.cfg.P2P.ResourceMemoryMiB) << 20
	c.ResourceFDs = n.cfg.P2P.ResourceFDs
	c.MinPeers = n.cfg.P2P.MinPeers
	c.ReconnectMin, c.ReconnectMax = n.cfg.P2P.ReconnectMin, n.cfg.P2P.ReconnectMax
	c.MaxMessageSize = n.cfg.P2P.GossipMaxMessageKiB << 10
	c.GossipHeartbeat = n.cfg.P2P.GossipHeartbeat
	c.Relay.CircuitDuration, c.Relay.CircuitBytes = n.cfg.P2P.RelayCircuitDuration, int64(n.cfg.P2P.RelayCircuitKiB)<<10
	c.UserAgent = "idlegrid/" + Version
	c.TopicPolicy = shardTopic
	c.TopicRendezvous = shardRendezvous(n.cfg.Role == RoleProvider)
	c.PresenceTopic = p2p.TopicFraud // every role subscribes to it (subscribedTopics)
	return c, nil
}

func parseAddrs(ss []string) ([]ma.Multiaddr, error) {
	out := make([]ma.Multiaddr, 0, len(ss))
	for _, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", s, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// subscribedTopics are the fixed topics a role listens to; providers also
// follow their shards' RFQ and digest topics (shards.go), renters the
// digest topics of the shards they learn of. Renters publish RFQs without
// subscribing to them. Bootstrap peers join every topic with mesh
// degree 0: they keep no mesh, but pruning the peers that graft to them is
// how they hand out peer exchange (PX) lists to newcomers.
func subscribedTopics(r Role) []string {
	switch r {
	case RoleRenter:
		return []string{p2p.TopicAttest, p2p.TopicFraud}
	default:
		return []string{p2p.TopicAttest, p2p.TopicFraud}
	}
}

// Run runs the node until ctx ends or a component fails; either way the
// other components are stopped before it returns. Close releases
// resources afterwards.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.runCtxMu.Lock()
	n.runCtx = ctx
	n.runCtxMu.Unlock()
	for _, t := range subscribedTopics(n.cfg.Role) {
		if err := n.p2p.Subscribe(ctx, t, n.onGossip(ctx, t)); err != nil {
			return fmt.Errorf("node.Run: %w", err)
		}
	}
	if err := n.followShards(ctx); err != nil {
		return fmt.Errorf("node.Run: %w", err)
	}
	if n.api != nil && n.cfg.Home != "" {
		if err := writeFileAtomic(APIURLPath(n.cfg.Home), []byte(n.api.URL()+"\n"), 0o644); err != nil {
			return fmt.Errorf("node.Run: record API address: %w", err)
		}
	}
	n.trust.BlockProven()
	errc := make(chan error, 6)
	var wg sync.WaitGroup
	wg.Go(func() { errc <- n.p2p.Run(ctx) })
	wg.Go(func() { n.pruneKnownPeers(ctx) })
	wg.Go(func() { errc <- n.trust.Run(ctx) })
	if n.provider != nil {
		wg.Go(func() { errc <- n.provider.Run(ctx) })
		wg.Go(func() { errc <- n.ops.Run(ctx) })
	}
	if n.renter != nil {
		wg.Go(func() { errc <- n.renter.Run(ctx) })
		wg.Go(func() { n.followRenterLots(ctx) })
	}
	if n.api != nil {
		wg.Go(func() { errc <- n.api.Serve(ctx) })
	}
	n.log.Info("node running", "role", n.cfg.Role, "peer", n.p2p.ID(), "api", n.APIURL())
	if len(n.cfg.P2P.Bootstrap) == 0 && n.cfg.Role != RoleBootstrap {
		// Said once at start, where an operator looks: otherwise the node
		// runs quietly alone (idlegrid status says so too).
		n.log.Warn("no bootstrap peers: p2p.bootstrap is empty, so this node joins only through peers remembered from earlier runs", "config", ConfigPath(n.cfg.Home))
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	wg.Wait()
	return err
}

// Close undoes New in reverse order: API, then p2p (pubsub, DHT, host),
// then the GPU backend and the store. It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.api != nil {
			errs = append(errs, n.api.Close())
			if n.cfg.Home != "" {
				if err := os.Remove(APIURLPath(n.cfg.Home)); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
		if n.provider != nil {
			errs = append(errs, n.provider.Close())
		}
		errs = append(errs, n.p2p.Close())
		if n.gpus != nil {
			errs = append(errs, n.gpus.Close())
		}
		errs = append(errs, n.cleanupWork())
		errs = append(errs, n.db.Close())
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// ID is the node's peer ID.
func (n *Node) ID() peer.ID { return n.p2p.ID() }

// Role is the node's role.
func (n *Node) Role() Role { return n.cfg.Role }

// P2P exposes the p2p layer (tests, later wiring).
func (n *Node) P2P() *p2p.Node { return n.p2p }

// Ready reports whether the node can route (non-empty routing table).
func (n *Node) Ready() bool { return n.p2p.Ready() }

// WaitReady blocks until Ready or ctx ends.
func (n *Node) WaitReady(ctx context.Context) error { return n.p2p.WaitReady(ctx) }

// APIURL is the API's base URL, or "" when the API is off.
func (n *Node) APIURL() string {
	if n.api == nil {
		return ""
	}
	return n.api.URL()
}

// P2PAddrs are the node's dialable addresses, each ending in /p2p/<id>:
// what another node puts in p2p.bootstrap.
func (n *Node) P2PAddrs() []string { return n.p2p.P2PAddrs() }

// Provider is the provider room (nil on other roles).
func (n *Node) Provider() *provider.Provider { return n.provider }

// Renter is the renter room (nil on other roles).
func (n *Node) Renter() *renter.Renter { return n.renter }

// Trust is what this node believes about other peers.
func (n *Node) Trust() *trust.Trust { return n.trust }

// Store is the node's store (tests read leases and jobs from it).
func (n *Node) Store() *store.DB { return n.db }

// knownPeersKept bounds the peer book: enough to rejoin a network whose
// bootstrap peers are all gone, small enough to read on every redial pass.
const knownPeersKept = 512

func (n *Node) pruneKnownPeers(ctx context.Context) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		if removed, err := n.db.PruneKnownPeers(knownPeersKept); err != nil {
			n.log.Warn("prune known peers", "err", err)
		} else if removed > 0 {
			n.log.Debug("pruned known peers", "removed", removed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// peerBook adapts the store to p2p.PeerBook.
type peerBook struct{ db *store.DB }

func (b peerBook) SavePeer(info peer.AddrInfo, seen time.Time) error {
	return b.db.SavePeer(store.KnownPeer{Info: info, LastSeen: seen})
}

func (b peerBook) KnownPeers(limit int) ([]peer.AddrInfo, error) {
	kps, err := b.db.KnownPeers(limit)
	if err != nil {
		return nil, err
	}
	out := make([]peer.AddrInfo, len(kps))
	for i, k := range kps {
		out[i] = k.Info
	}
	return out, nil
}
