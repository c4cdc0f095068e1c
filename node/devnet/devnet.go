// Package devnet runs a whole local idlegrid network in one process: a
// bootstrap peer, N providers with simulated GPUs and one renter on
// loopback, for `idlegrid devnet` and for trying the flow end to end. The
// providers run WASM, and Docker too when asked (a local engine): the
// devnet then builds a demo service image with no registry (hello.go) and
// removes its providers' containers when it closes. It builds whole nodes,
// so it sits beside node/nodetest rather than inside node.
package devnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor/docker"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
	"github.com/idlegrid/idlegrid/node/gpu"
)

// Options configure a local network in one process.
type Options struct {
	// Dir holds one home per node; reused (identities and stores kept)
	// when it already exists.
	Dir string
	// Providers is the number of provider nodes.
	Providers int
	// Runtimes the providers offer; nil means wasm. With "docker" they
	// run containers on the local engine (DOCKER_HOST, else the socket).
	Runtimes []string
	// Logger; nil discards.
	Logger *slog.Logger
}

// Member is one member of a devnet.
type Member struct {
	Name string
	Home string
	Node *node.Node
}

// Devnet is a bootstrap peer, N providers and one renter on loopback.
type Devnet struct {
	Nodes []Member

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	docker    bool // providers run containers: Close removes them
	closeOnce sync.Once
	closeErr  error
}

// Start initialises homes, starts every node on 127.0.0.1 with
// ephemeral ports, and returns once all of them run. Call Close to stop.
func Start(ctx context.Context, o Options) (_ *Devnet, err error) {
	if o.Providers < 1 || o.Providers > 64 {
		return nil, fmt.Errorf("devnet: providers %d: want 1..64", o.Providers)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	runtimes := o.Runtimes
	if len(runtimes) == 0 {
		runtimes = []string{"wasm"}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := &Devnet{cancel: cancel, docker: slices.Contains(runtimes, "docker")}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	type member struct {
		name  string
		role  node.Role
		offer devnetOffer
		seed  uint64
	}
	members := []member{{name: "bootstrap", role: node.RoleBootstrap}}
	for i := range o.Providers {
		members = append(members, member{
			name: fmt.Sprintf("provider-%d", i+1), role: node.RoleProvider,
			offer: devnetOffers[i%len(devnetOffers)], seed: uint64(i + 1),
		})
	}
	members = append(members, member{name: "renter", role: node.RoleRenter})

	var bootstrap []string
	for _, m := range members {
		home := filepath.Join(o.Dir, m.name)
		cfg := node.DefaultConfig(m.role)
		cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
		cfg.P2P.Bootstrap = bootstrap
		cfg.P2P.NAT = false
		cfg.P2P.ConnGrace = 0
		cfg.P2P.GossipHeartbeat = Heartbeat
		cfg.API.Listen = "127.0.0.1:0"
		cfg.API.Debug = true
		if m.role == node.RoleProvider {
			cfg.GPU.Backend = gpu.BackendSim
			cfg.GPU.Sim.Profiles = m.offer.profiles
			cfg.GPU.Sim.Seed = m.seed
			cfg.Provider.Region = m.offer.region
			cfg.Provider.Zone = m.offer.zone
			cfg.Provider.FloorUSD = m.offer.floor
			cfg.Provider.Runtimes = slices.Clone(runtimes)
			// A stopped service gets a second, not the default 10 s: Ctrl-C
			// on the devnet should not wait on its containers.
			cfg.Executor.StopGrace = time.Second
			cfg.Provider.Republish = time.Minute
			cfg.Provider.RecordTTL = 5 * time.Minute
		}
		cfg.Market.Refresh = 2 * time.Second
		// Short attestation windows, so the demo's lease is attested and
		// paid for while you watch.
		cfg.Attest.Sample = 250 * time.Millisecond
		cfg.Attest.Window = 2 * time.Second
		cfg.Attest.VoucherInterval = 2 * time.Second
		cfg.P2P.TelemetryGossipEvery = 2 * time.Second
		if _, err := node.Init(home, m.role, node.InitOptions{Force: true, Config: &cfg}); err != nil {
			return nil, fmt.Errorf("devnet: %s: %w", m.name, err)
		}
		cfg.Home = home
		n, err := node.New(cfg, node.Deps{Logger: o.Logger.With("node", m.name), Registry: prometheus.NewRegistry()})
		if err != nil {
			return nil, fmt.Errorf("devnet: %s: %w", m.name, err)
		}
		d.Nodes = append(d.Nodes, Member{Name: m.name, Home: home, Node: n})
		d.wg.Go(func() {
			if err := n.Run(runCtx); err != nil {
				o.Logger.Error("devnet node stopped", "node", m.name, "err", err)
			}
		})
		if m.role == node.RoleBootstrap {
			bootstrap = n.P2PAddrs()
		}
		if m.role == node.RoleRenter {
			// The renter serves the demo module to whichever provider
			// wins its demo job.
			if _, err := n.Renter().AddArtifact(bytes.NewReader(demo.Module())); err != nil {
				return nil, fmt.Errorf("devnet: %s: %w", m.name, err)
			}
		}
	}
	return d, nil
}

// devnetOffer is one simulated provider of the devnet.
type devnetOffer struct {
	profiles []string
	region   string
	zone     string
	floor    node.FloorUSD
}

// devnetOffers is a small, varied market: different GPUs, countries and
// prices, with floors in the range peer-to-peer GPU markets ask
// (below the clouds' on-demand rates in data/traces/prices-fsdl).
var devnetOffers = []devnetOffer{
	{[]string{"h100-sxm-80gb", "h100-sxm-80gb"}, "de", "fra-1", node.FloorUSD{Gold: 3.20, Silver: 2.49, Bronze: 1.89}},
	{[]string{"a100-sxm-80gb", "a100-sxm-80gb", "a100-sxm-80gb", "a100-sxm-80gb"}, "fr", "par-2", node.FloorUSD{Gold: 2.20, Silver: 1.69, Bronze: 1.19}},
	{[]string{"rtx-4090", "rtx-4090"}, "us", "", node.FloorUSD{Gold: 0.90, Silver: 0.69, Bronze: 0.44}},
	{[]string{"l40s", "l40s"}, "nl", "ams-1", node.FloorUSD{Gold: 1.60, Silver: 1.19, Bronze: 0.89}},
	{[]string{"a10"}, "se", "", node.FloorUSD{Gold: 0.95, Silver: 0.75, Bronze: 0.50}},
	{[]string{"t4", "t4", "t4", "t4"}, "fi", "", node.FloorUSD{Gold: 0.55, Silver: 0.40, Bronze: 0.25}},
}

// Heartbeat is a faster gossip heartbeat for loopback networks, so
// meshes form in a fraction of a second.
const Heartbeat = 200 * time.Millisecond

// WaitReady waits until every node has a non-empty routing table.
func (d *Devnet) WaitReady(ctx context.Context) error {
	for _, m := range d.Nodes {
		if err := m.Node.WaitReady(ctx); err != nil {
			return fmt.Errorf("devnet: %s: %w", m.Name, err)
		}
	}
	return nil
}

// Close stops every node, the last started first, then removes the
// containers its providers left running (a daemon keeps them for its
// restart; a devnet's providers do not come back to them).
func (d *Devnet) Close() error {
	d.closeOnce.Do(func() {
		d.cancel()
		d.wg.Wait()
		var errs []error
		for i := len(d.Nodes) - 1; i >= 0; i-- {
			if err := d.Nodes[i].Node.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", d.Nodes[i].Name, err))
			}
		}
		if d.docker {
			errs = append(errs, d.purgeContainers())
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// purgeContainers removes the providers' containers and service networks.
func (d *Devnet) purgeContainers() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := docker.Dial(ctx, "")
	if err != nil {
		return fmt.Errorf("devnet: remove containers: %w", err)
	}
	defer cli.Close()
	var errs []error
	for _, m := range d.Nodes {
		if m.Node.Role() == node.RoleProvider {
			errs = append(errs, docker.PurgeInstance(ctx, cli, m.Node.ID().String()))
		}
	}
	return errors.Join(errs...)
}

// TempDir makes a fresh directory for a devnet that is removed later.
func TempDir() (string, error) {
	return os.MkdirTemp("", "idlegrid-devnet-")
}

// DemoModule names the WASM module of the devnet's example job (see
// package demo); the devnet's renter holds it.
const DemoModule = demo.CID

// DemoJob is the devnet's example job: the demo module on any one
// GPU, silver tier.
func DemoJob() []byte {
	return fmt.Appendf(nil, `name: devnet-demo
module: %s
command: ["%d"]
gpus: 1
tier: silver
max_price: 3.00
duration: 1m
bid_window: 2s
`, demo.CID, demo.DefaultN)
}

// DemoResult is what the demo job writes to its output file.
const (
	DemoResultFile = demo.ResultFile
	DemoResult     = demo.ExpectedResult
)
