// Package provider is the GPU owner's side of the market: it keeps the
// capacity record in the DHT (advertiser), answers RFQs with bids and
// turns awards into countersigned leases (bidder), runs the leased work in
// its executors (lease runner), keeps the signed telemetry chain
// (attestor), serves the job protocol to its renters, and takes vouchers
// and issues receipts (pay). The node routes RFQs, awards and job-protocol
// requests to it; it knows neither the renter nor trust.
package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Config is what the provider needs of the node's configuration.
type Config struct {
	Offer    OfferConfig    // [provider]
	Executor ExecutorConfig // [executor]
	Attest   lease.Terms    // [attest]
	// Home is the node's home directory (host facts read its free disk);
	// empty in tests.
	Home string
	// Version is the software version advertised in capacity records.
	Version string
	// Costs prices the earnings ([costs]).
	Costs costs.Config
}

// Deps are the provider's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Clock dates bids, leases, vouchers and attestations; nil: time.Now.
	Clock func() time.Time
	Key   crypto.PrivKey
	P2P   *p2p.Node
	Store *store.DB
	// Leases is the node's lease book.
	Leases *lease.Book
	// GPU is the GPU backend; the node owns it.
	GPU gpu.Backend
	// Artifacts is where fetched WASM modules are kept.
	Artifacts *executor.DirArtifacts
	// WorkDir holds executor state and kept results.
	WorkDir string
	// Executors replace the built-in runtimes of the same name (tests
	// inject fakes); the provider owns them.
	Executors []executor.Executor
	// AdmitAward is the operator's award admission policy; nil admits all.
	AdmitAward AdmitAward
	// ShardView returns the digests this node holds of one shard, for the
	// bounded-bidding rule; nil: bid on every feasible RFQ.
	ShardView func(s auction.Shard) []*auction.Digest
	// PriceIndex is the network's cleared prices (signed award summaries),
	// which cap the scarcity markup; nil: no cap.
	PriceIndex func(since, until time.Time) ([]auction.PriceStat, error)
	// Registerer gets the service tunnel's metrics; nil: none.
	Registerer prometheus.Registerer
}

// Provider is the running provider room.
type Provider struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	key    crypto.PrivKey
	self   peer.ID
	p2p    *p2p.Node
	db     *store.DB
	leases *lease.Book
	gpus   gpu.Backend

	ex     *executors
	attest *attestor
	adv    *advertiser
	cpu    *cpuPool // the CPU share leased to CPU-only work
	firm   *firmHolds
	bidder *bidder
	runner *leaseRunner
	digest *digester
	// services are the running service leases; fwd tunnels to them.
	services *serviceBook
	fwd      *forward.Server

	// shardView is this node's digests of one shard (trust's book).
	shardView func(s auction.Shard) []*auction.Digest
	// priceIndex is trust's price index, for the scarcity cap.
	priceIndex func(since, until time.Time) ([]auction.PriceStat, error)
	index      indexCache
	disk       diskGate
	history    gpuHistory

	group     sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	live      liveConfig // what a reload replaced (reload.go)
}

// New builds the provider: executors (only the runtimes that can run here
// are advertised), the attestation chain continued from the store, the
// advertiser and the bidder with the commitments of stored leases.
func New(cfg Config, deps Deps) (_ *Provider, err error) {
	if deps.Key == nil || deps.P2P == nil || deps.Store == nil || deps.Leases == nil || deps.GPU == nil {
		return nil, errors.New("provider.New: key, p2p, store, lease book and GPU backend are required")
	}
	p := &Provider{
		cfg: cfg, log: deps.Logger, now: deps.Clock, key: deps.Key, self: deps.P2P.ID(),
		p2p: deps.P2P, db: deps.Store, leases: deps.Leases, gpus: deps.GPU, shardView: deps.ShardView, priceIndex: deps.PriceIndex,
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	var offered []string
	if p.ex, offered, err = openExecutors(cfg, deps.WorkDir, deps.Artifacts, deps.Executors, p.self.String(), p.log.With("component", "executor")); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	defer func() {
		if err != nil {
			_ = p.ex.Close()
		}
	}()
	// Advertise only the runtimes that can run here.
	p.cfg.Offer.Runtimes = offered
	if p.attest, err = openAttestor(p); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.services = newServiceBook()
	if p.fwd, err = forward.NewServer(forward.ServerConfig{}, forward.ServerDeps{Logger: p.log, Registerer: deps.Registerer, Resolve: p.ResolveTunnel}); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.firm = newFirmHolds(cfg.Offer.FirmHold, cfg.Offer.FirmHoldGPUs, p.now)
	if p.adv, err = newAdvertiser(p, p.key, p.gpus); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.cpu = newCPUPool(p.adv.host, cfg.Offer.CPUShare, cfg.Offer.CPUFloorUSD)
	p.adv.cpuOffer = p.cpu.offer
	p.digest = newDigester(p)
	p.adv.onChange = p.digest.signal
	p.bidder = newBidder(p, deps.AdmitAward)
	p.runner = p.bidder.runner
	if err := p.bidder.restore(); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	return p, nil
}

// Run advertises, runs leases and attests until ctx ends.
func (p *Provider) Run(ctx context.Context) error {
	p.group.Go(func() { p.adv.run(ctx) })
	p.group.Go(func() { p.runner.run(ctx) })
	p.group.Go(func() { p.attest.run(ctx) })
	p.group.Go(func() { p.digest.run(ctx) })
	<-ctx.Done()
	p.group.Wait()
	return nil
}

// Close closes the executors. Run must have returned. It is idempotent.
func (p *Provider) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.ex.Close() })
	return p.closeErr
}

// ID is the provider's peer ID.
func (p *Provider) ID() peer.ID { return p.self }

// Offered is the provider's offer as configured, with the runtimes that
// can run here.
func (p *Provider) Offered() OfferConfig { return p.cfg.Offer }

// HandleRFQ answers one validated RFQ (a bid, or nothing).
func (p *Provider) HandleRFQ(ctx context.Context, msg p2p.Message) { p.bidder.onRFQ(ctx, msg) }

// HandleAward answers a sealed award (LeaseProto) with a tagged acceptance
// or decline.
func (p *Provider) HandleAward(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	return p.bidder.handleAward(ctx, from, req)
}

// ServeJob serves a renter's job-protocol request about one of its leases.
func (p *Provider) ServeJob(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	return p.runner.serveJob(ctx, from, req, send)
}

// AuctionClosed releases what this provider's bids for a finished auction
// still hold (the renter's signed award summary closes it).
func (p *Provider) AuctionClosed(sum *auction.AwardSummary) { p.bidder.auctionClosed(sum) }

// Capacity is the last published capacity record (nil before the first).
func (p *Provider) Capacity() *auction.Capacity { return p.adv.Current() }

// GPUs is the provider's GPU backend.
func (p *Provider) GPUs() gpu.Backend { return p.gpus }

// LeaseGPU marks one of the offered GPUs leased; the capacity record is
// re-published at once without it.
func (p *Provider) LeaseGPU(uuid, leaseID string) error { return p.adv.Lease(uuid, leaseID) }

// ReleaseGPU frees a leased GPU and re-publishes.
func (p *Provider) ReleaseGPU(uuid string) error { return p.adv.Release(uuid) }

// KeptOutputPath is where a finished lease's output tar waits for its
// renter.
func (p *Provider) KeptOutputPath(leaseID string) string { return p.ex.outputPath(leaseID) }

// jobCall calls a renter's job protocol.
func (p *Provider) jobCall(ctx context.Context, to peer.ID, req *jobproto.Request) (*jobproto.Header, *p2p.Frames, error) {
	return lease.Call(ctx, p.p2p, to, req)
}
