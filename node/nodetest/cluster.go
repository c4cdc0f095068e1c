// Package nodetest builds in-process idlegrid clusters for tests and
// benchmarks: real nodes (store, DHT, gossipsub, validators) on a libp2p
// mocknet, one bootstrap peer first, wired and torn down with the test.
// Options.Transport puts them on real libp2p hosts on 127.0.0.1 instead.
package nodetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/provider"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/memnet"
	"github.com/idlegrid/idlegrid/store"
)

// Options shape a cluster. The zero value is usable.
type Options struct {
	// Role picks member i's role; default: DefaultRole.
	Role func(i, n int) node.Role
	// Configure adjusts member i's config after the test defaults.
	Configure func(i int, cfg *node.Config)
	// API serves each member's HTTP API on 127.0.0.1 with Token.
	API bool
	// Link sets mocknet link latency and bandwidth (zero: instant).
	Link mocknet.LinkOptions
	// Transport, when set, gives every member a real libp2p host, not
	// mocknet: "tcp" or "quic" listening on 127.0.0.1 with that transport
	// only, for measuring the real network stack; "memnet" on one
	// in-process network with no security handshake (p2p/p2ptest/memnet),
	// for measuring hundreds of nodes in one process. Link does not apply.
	Transport string
	// AdmitAward gives member i an award admission policy (nil: admit all).
	AdmitAward func(i int) provider.AdmitAward
	// Executors gives provider i its runtimes, with dir for their files.
	// nil: a scripted fake serving "wasm" (executortest.Fake: a job's
	// command is its script, e.g. ["sleep:2s"]); a func returning nil: the
	// node's built-in runtimes.
	Executors func(i int, dir string) []executor.Executor
	// GPU gives provider i its GPU backend (nil: the simulated GPUs its
	// config names). The node owns it.
	GPU func(i int) gpu.Backend
	// WithholdPayment gives member i a renter payment policy.
	WithholdPayment func(i int) func(leaseID string) bool
	// LotsFor replaces the providers' lot count rule (node.Deps.LotsFor):
	// a cluster's shards are far below the thousand providers a split needs.
	LotsFor func(prev, shardSize int) int
	// ReplayExecutor re-runs the jobs of wrong-result proofs on every
	// member (nil: the embedded WASM runtime; FakeReplay matches the
	// scripted fake providers run).
	ReplayExecutor node.ReplayExecutor
	// StartGap spaces the members' starts (zero: all at once). Start
	// returns once the last has started.
	StartGap time.Duration
	// Bootstraps is how many members, the first ones, every other member
	// is handed as its bootstrap peer (zero: one, member 0, whatever role
	// Role gives it; more than one are given RoleBootstrap). Each other
	// member gets one of them, in turn, as a network's newcomers would be
	// handed one of several; the first knows no one, the others the first.
	Bootstraps int
}

// LogDirEnv names a directory: when set, each member writes its debug log
// there, one file per member named by the time it started, its index and
// its role. For finding out why a cluster test failed; the logs of a
// passing run can be thrown away.
const LogDirEnv = "IDLEGRID_TEST_LOGDIR"

// Token is the API token of every cluster member when Options.API is set.
const Token = "nodetest-token-0123456789abcdef0123456789abcdef"

// Member is one node of a cluster.
type Member struct {
	Index  int
	Role   node.Role
	Node   *node.Node
	Key    crypto.PrivKey
	Config node.Config
	Addr   ma.Multiaddr

	// Registry holds the member's metrics.
	Registry *prometheus.Registry

	workDir string       // the provider's work directory, removed on stop
	logFile *os.File     // the member's debug log (LogDirEnv), closed on stop
	real    bool         // a real libp2p host (Options.Transport), not mocknet
	host    *limitedHost // the mocknet host (nil on a real transport)
	// transports replace a real host's own (memnet); nil: TCP and QUIC.
	transports []libp2p.Option

	admit     provider.AdmitAward
	executors func(i int, dir string) []executor.Executor
	gpu       func(i int) gpu.Backend
	withhold  func(i int) func(string) bool
	lotsFor   func(prev, shardSize int) int
	replay    node.ReplayExecutor
	cancel    context.CancelFunc
	done      chan struct{}
}

// start runs the member's node until stop.
func (m *Member) start() {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		_ = m.Node.Run(ctx)
	}()
}

// stop ends Run and closes the node.
func (m *Member) stop() error {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
	if m.Node == nil {
		return nil
	}
	err := m.Node.Close()
	if m.logFile != nil {
		err = errors.Join(err, m.logFile.Close())
		m.logFile = nil
	}
	if m.workDir != "" {
		err = errors.Join(err, os.RemoveAll(m.workDir))
		m.workDir = ""
	}
	return err
}

// Cluster is a running in-process network.
type Cluster struct {
	Members []*Member
	Net     mocknet.Mocknet
	// Started is when the first member started running.
	Started time.Time

	once sync.Once
	err  error
}

// DefaultRole is 0 bootstrap, last renter (n >= 3), providers between.
func DefaultRole(i, n int) node.Role {
	switch {
	case i == 0:
		return node.RoleBootstrap
	case i == n-1 && n >= 3:
		return node.RoleRenter
	default:
		return node.RoleProvider
	}
}

// New starts an n-member cluster and registers its teardown with tb.
func New(tb testing.TB, n int, o Options) *Cluster {
	tb.Helper()
	c, err := Start(n, o)
	if err != nil {
		tb.Fatalf("nodetest: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("nodetest: close: %v", err)
		}
	})
	return c
}

// Start starts an n-member cluster; the caller must Close it.
func Start(n int, o Options) (_ *Cluster, err error) {
	if o.Role == nil {
		o.Role = DefaultRole
	}
	mn := mocknet.New()
	mn.SetLinkDefaults(o.Link)
	c := &Cluster{Net: mn}
	var mem *memnet.Network
	if o.Transport == transportMemnet {
		mem = memnet.New()
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	var bootstraps [][]string // bootstraps[j]: bootstrap peer j's addresses
	boots := max(o.Bootstraps, 1)
	if o.Bootstraps > 1 {
		role := o.Role
		o.Role = func(i, n int) node.Role {
			if i < boots {
				return node.RoleBootstrap
			}
			return role(i, n)
		}
	}
	for i := range n {
		role := o.Role(i, n)
		var bootstrap []string
		switch {
		case i < boots && len(bootstraps) > 0:
			bootstrap = bootstraps[0]
		case i >= boots && len(bootstraps) > 0:
			bootstrap = bootstraps[i%len(bootstraps)]
		}
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			return nil, err
		}
		// Distinct /16s keep gossipsub's IP-colocation penalty out of tests.
		addr := ma.StringCast(fmt.Sprintf("/ip4/10.%d.%d.1/tcp/7401", i/200, i%200))
		if o.Transport != "" && mem == nil {
			if addr, err = loopbackAddr(o.Transport); err != nil {
				return nil, err
			}
		}
		cfg := node.DefaultConfig(role)
		cfg.P2P.Listen = []string{addr.String()}
		cfg.P2P.Bootstrap = bootstrap
		cfg.P2P.NAT = false
		cfg.P2P.ConnGrace = 0
		cfg.P2P.GossipHeartbeat = 100 * time.Millisecond
		cfg.P2P.ReconnectMin = 100 * time.Millisecond
		cfg.P2P.ReconnectMax = 2 * time.Second
		cfg.API.Listen = ""
		cfg.API.Debug = true
		if role == node.RoleProvider {
			cfg.GPU.Backend = gpu.BackendSim
			cfg.GPU.Sim.Profiles = []string{"a10"}
			cfg.GPU.Sim.Seed = uint64(i)
			cfg.Provider.Region = "de"
			cfg.Provider.Runtimes = []string{"wasm"}
		}
		// Fresh records on every search: tests check what the DHT holds now.
		cfg.Market.Refresh = 0
		// A job with no plan ends unfilled at its first auction, as the
		// cluster tests of placement rules expect; waiting for a plan
		// (market.max_wait) is tested in node/renter.
		cfg.Market.MaxWait = 0
		if o.API {
			cfg.API.Listen = "127.0.0.1:0"
		}
		if o.Configure != nil {
			o.Configure(i, &cfg)
		}
		m := &Member{Index: i, Role: role, Key: sk, Config: cfg, Addr: addr, real: o.Transport != ""}
		if mem != nil {
			m.transports = mem.HostOptions()
		}
		if o.AdmitAward != nil {
			m.admit = o.AdmitAward(i)
		}
		m.executors = o.Executors
		m.gpu = o.GPU
		m.withhold = o.WithholdPayment
		m.lotsFor = o.LotsFor
		m.replay = o.ReplayExecutor
		if err := newNode(mn, m); err != nil {
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		nd := m.Node
		c.Members = append(c.Members, m)
		if i < boots {
			bootstraps = append(bootstraps, nd.P2PAddrs())
		}
	}
	if err := mn.LinkAll(); err != nil {
		return nil, fmt.Errorf("link mocknet: %w", err)
	}
	c.Started = time.Now()
	for i, m := range c.Members {
		if i > 0 && o.StartGap > 0 {
			time.Sleep(o.StartGap)
		}
		m.start()
	}
	return c, nil
}

// loopbackAddr is a listen address on 127.0.0.1 with an ephemeral port.
func loopbackAddr(transport string) (ma.Multiaddr, error) {
	switch transport {
	case "tcp":
		return ma.StringCast("/ip4/127.0.0.1/tcp/0"), nil
	case "quic":
		return ma.StringCast("/ip4/127.0.0.1/udp/0/quic-v1"), nil
	}
	return nil, fmt.Errorf("nodetest: transport %q: want tcp, quic or %s", transport, transportMemnet)
}

// transportMemnet is Options.Transport for p2p/p2ptest/memnet.
const transportMemnet = "memnet"

// newNode adds m's host to the mocknet (or, for a real member, lets the
// node build its own) and builds its node on it.
func newNode(mn mocknet.Mocknet, m *Member) error {
	var h host.Host
	closeHost := func() {}
	if !m.real {
		lh, err := limitedPeer(mn, m)
		if err != nil {
			return err
		}
		h, closeHost, m.host = lh, func() { _ = lh.Close() }, lh
	}
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		closeHost()
		return err
	}
	m.Registry = prometheus.NewRegistry()
	deps := node.Deps{Host: h, Transports: m.transports, Store: db, Identity: m.Key, Token: Token, Registry: m.Registry, AdmitAward: m.admit,
		ReplayExecutor: m.replay, LotsFor: m.lotsFor}
	if dir := os.Getenv(LogDirEnv); dir != "" {
		f, err := os.CreateTemp(dir, fmt.Sprintf("%s-member-%d-%s-*.log", time.Now().Format("150405"), m.Index, m.Role))
		if err != nil {
			closeHost()
			_ = db.Close()
			return fmt.Errorf("%s: %w", LogDirEnv, err)
		}
		m.logFile = f
		deps.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if m.withhold != nil {
		deps.WithholdPayment = m.withhold(m.Index)
	}
	if m.Role == node.RoleProvider && m.gpu != nil {
		deps.GPU = m.gpu(m.Index)
	}
	if m.Role == node.RoleProvider {
		dir, err := os.MkdirTemp("", "idlegrid-nodetest-")
		if err != nil {
			closeHost()
			_ = db.Close()
			return err
		}
		m.workDir = dir
		deps.WorkDir = dir
		if m.executors != nil {
			deps.Executors = m.executors(m.Index, dir)
		} else {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "wasm"
			deps.Executors = []executor.Executor{fake}
		}
	}
	if m.Node, err = node.New(m.Config, deps); err != nil {
		return err
	}
	if m.real {
		// The port the host got.
		if addrs := m.Node.P2PAddrs(); len(addrs) > 0 {
			a, err := ma.NewMultiaddr(addrs[0])
			if err != nil {
				return err
			}
			m.Addr, _ = ma.SplitLast(a)
		}
	}
	if m.Role == node.RoleRenter {
		// Renters serve the demo module, so jobs naming DemoModule run on
		// any runtime the providers have.
		if _, err := m.Node.Renter().AddArtifact(bytes.NewReader(demo.Module())); err != nil {
			return err
		}
	}
	return nil
}

// DemoModule is the CID of the WASM module every cluster renter holds.
const DemoModule = demo.CID

// WaitReady waits until every member's routing table is non-empty.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for _, m := range c.Members {
		if err := m.Node.WaitReady(ctx); err != nil {
			return fmt.Errorf("member %d (%s): %w", m.Index, m.Role, err)
		}
	}
	return nil
}

// ByRole returns the members with a role.
func (c *Cluster) ByRole(r node.Role) []*Member {
	var out []*Member
	for _, m := range c.Members {
		if m.Role == r {
			out = append(out, m)
		}
	}
	return out
}

// AddPeer adds a bare host with a fresh identity at addr to a mocknet
// cluster and links it to every member, for a test's own peer (a hostile
// one, say, with an address in a network of its own). The caller connects
// it and closes it.
func (c *Cluster) AddPeer(addr ma.Multiaddr) (host.Host, error) {
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	h, err := c.Net.AddPeer(sk, addr)
	if err != nil {
		return nil, fmt.Errorf("nodetest: add peer: %w", err)
	}
	for _, m := range c.Members {
		if m.real {
			return nil, fmt.Errorf("nodetest: add peer: member %d is on a real transport", m.Index)
		}
		if _, err := c.Net.LinkPeers(h.ID(), m.Node.ID()); err != nil {
			return nil, fmt.Errorf("nodetest: add peer: link: %w", err)
		}
	}
	return h, nil
}
