package nodetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/store"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	basicconnmgr "github.com/libp2p/go-libp2p/p2p/net/connmgr"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
)

// limitedHost gives a mocknet host a real connection manager.
//
// mocknet builds its hosts with bhost.HostOpts{} and no ConnManager, so
// they get a NullConnMgr; p2p.New only builds a connection manager when it
// builds the host itself. Through Start, cfg.P2P.ConnLow/ConnHigh/ConnGrace
// are therefore silently ignored and a mocknet cluster has no connection
// limits at all. The DHT (routing-table tags) and gossipsub (mesh and
// delivery tags) read host.ConnManager() once, at construction, so the
// manager has to be in place before node.New: it cannot be added to a
// cluster afterwards.
type limitedHost struct {
	host.Host
	cm *basicconnmgr.BasicConnMgr
}

func (h *limitedHost) ConnManager() connmgr.ConnManager { return h.cm }

func (h *limitedHost) Close() error { return errors.Join(h.Host.Close(), h.cm.Close()) }

// startLimited is Start with each member's connection manager built from
// its cfg.P2P water marks and grace period, so that a benchmark measures
// a network with the limits production nodes run with. It also returns
// each member's metrics registry (Start keeps them private). Everything
// else (addresses, test timers, simulated GPUs, roles, start order)
// deliberately mirrors Start and must follow it when Start changes; once
// Start honours the water marks itself this helper can go.
func startLimited(n int, o Options) (_ *Cluster, regs []*prometheus.Registry, err error) {
	if o.Role == nil {
		o.Role = DefaultRole
	}
	mn := mocknet.New()
	mn.SetLinkDefaults(o.Link)
	c := &Cluster{Net: mn}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	var bootstrap []string
	for i := range n {
		role := o.Role(i, n)
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			return nil, nil, err
		}
		addr := ma.StringCast(fmt.Sprintf("/ip4/10.%d.%d.1/tcp/7401", i/200, i%200))
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
		cfg.Market.Refresh = 0
		if o.Configure != nil {
			o.Configure(i, &cfg)
		}
		m := &Member{Index: i, Role: role, Key: sk, Config: cfg, Addr: addr}
		h, err := limitedPeer(mn, m)
		if err != nil {
			return nil, nil, fmt.Errorf("member %d: %w", i, err)
		}
		db, err := store.Open("", store.Options{InMemory: true})
		if err != nil {
			_ = h.Close()
			return nil, nil, err
		}
		reg := prometheus.NewRegistry()
		if m.Node, err = node.New(cfg, node.Deps{Host: h, Store: db, Identity: sk, Token: Token, Registry: reg}); err != nil {
			return nil, nil, fmt.Errorf("member %d: %w", i, err)
		}
		c.Members = append(c.Members, m)
		regs = append(regs, reg)
		if i == 0 {
			bootstrap = m.Node.P2PAddrs()
		}
	}
	if err := mn.LinkAll(); err != nil {
		return nil, nil, fmt.Errorf("link mocknet: %w", err)
	}
	for _, m := range c.Members {
		m.start()
	}
	return c, regs, nil
}

// limitedPeer adds m to the mocknet behind a connection manager built
// from m's water marks and grace period.
func limitedPeer(mn mocknet.Mocknet, m *Member) (*limitedHost, error) {
	h, err := mn.AddPeer(m.Key, m.Addr)
	if err != nil {
		return nil, fmt.Errorf("mocknet host: %w", err)
	}
	p := m.Config.P2P
	cm, err := basicconnmgr.NewConnManager(p.ConnLow, p.ConnHigh, basicconnmgr.WithGracePeriod(p.ConnGrace))
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	// What bhost.NewHost does when it is given a manager: the manager
	// learns of connections through the network's notifications.
	h.Network().Notify(cm.Notifee())
	return &limitedHost{Host: h, cm: cm}, nil
}
