// Package provider is the GPU owner's side of the market: it keeps the
// capacity record in the DHT (advertiser) and its digest on the shards'
// topics (digester), answers RFQs with bids and turns awards into
// countersigned leases (bidder), runs the leased work in its executors
// (lease runner), keeps the signed telemetry chain (attestor), serves the
// job protocol to its renters (job server), and takes vouchers and issues
// receipts (cashier). The node routes RFQs, awards and job-protocol
// requests to it; it knows neither the renter nor trust.
//
// Provider is a facade: New builds each component from its own deps
// struct of narrow callbacks and wires them; no component holds the room.
package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// BeatEvery is how often the provider gossips a heartbeat
	// ([p2p] telemetry_gossip_every; attest.BeatSlot); 0: every entry.
	BeatEvery time.Duration
	// Home is the node's home directory (host facts read its free disk);
	// empty in tests.
	Home string
	// Version is the software version advertised in capacity records.
	Version string
	// Costs prices the earnings ([costs]).
	Costs costs.Config
	// TakeUp bounds what renters' awards hold before they are taken up;
	// nil: auction.DefaultTakeUpLimits (tests of other rules set none).
	TakeUp *auction.TakeUpLimits
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
	// NotePrefix is told the always-bid prefix each bid decision
	// computed (RFQ record ID, its renter, the prefix), so the RFQ's award
	// summary can show which of it never bid; nil: not told.
	NotePrefix func(rfqID, renter string, always []string)
	// FollowLots moves this provider's topics of shard s to lots lots
	// (its lot's, or the shard's own at 1: auction.ProviderShardTopics);
	// nil joins none (lots.go).
	FollowLots func(s auction.Shard, lots int)
	// LotsNamed counts the backed providers of shard s by the lot count
	// each names (trust.LotCounts), which a provider in one lot joins
	// (auction.JoinLots); nil: never joins a count it did not count.
	LotsNamed func(s auction.Shard) map[int]int
	// LotsFor replaces auction.LotsFor, the count of lots a shard of a
	// size is put in (tests split small shards); nil: auction.LotsFor.
	LotsFor func(prev, shardSize int) int
	// PriceIndex is the network's cleared prices (signed award summaries),
	// which cap the scarcity markup; nil: no cap.
	PriceIndex func(since, until time.Time) ([]auction.PriceStat, error)
	// Registerer gets the service tunnel's metrics; nil: none.
	Registerer prometheus.Registerer
}

// Provider is the running provider room: the facade the node calls, over
// the components New builds and wires.
type Provider struct {
	cfg  Config
	self peer.ID
	log  *slog.Logger
	gpus gpu.Backend

	ex       *executors
	firm     *firmHolds
	cpu      *cpuPool // the CPU share leased to CPU-only work
	adv      *advertiser
	digest   *digester
	market   *marketView
	lots     *lotCounts
	disk     *diskGate
	history  *gpuHistory
	attest   *attestor
	services *serviceBook // the running service leases; fwd tunnels to them
	fwd      *forward.Server
	cashier  *cashier
	runner   *leaseRunner
	bidder   *bidder
	jobs     *jobServer
	books    *bookkeeper
	tasks    *tasks
	prestage *prestager

	closers   []func() error // what New opened, undone in reverse by Close
	group     sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// New builds the provider's components and wires them: executors (only
// the runtimes that can run here are advertised), the attestation chain
// continued from the store, the advertiser and digester, the market view,
// the cashier, the lease runner, the bidder with the commitments of stored
// leases, and the job server. If a step fails, what was opened is closed.
func New(cfg Config, deps Deps) (_ *Provider, err error) {
	if deps.Key == nil || deps.P2P == nil || deps.Store == nil || deps.Leases == nil || deps.GPU == nil {
		return nil, errors.New("provider.New: key, p2p, store, lease book and GPU backend are required")
	}
	log, now := deps.Logger, deps.Clock
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	key, network, db, book, gpus := deps.Key, deps.P2P, deps.Store, deps.Leases, deps.GPU
	p := &Provider{cfg: cfg, self: network.ID(), log: log, gpus: gpus, history: &gpuHistory{}, tasks: &tasks{}}
	defer func() {
		if err != nil {
			_ = p.Close()
		}
	}()
	var offered []string
	if p.ex, offered, err = openExecutors(cfg, deps.WorkDir, deps.Artifacts, deps.Executors, p.self.String(), log.With("component", "executor")); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.closers = append(p.closers, p.ex.Close)
	// Advertise only the runtimes that can run here.
	p.cfg.Offer.Runtimes = offered
	offer := p.cfg.Offer

	p.lots = newLotCounts(p.self.String(), deps.LotsFor, func(s auction.Shard, lots int) int { return p.market.shardSize(s, lots) }, deps.FollowLots)
	p.lots.named = deps.LotsNamed
	if p.attest, err = openAttestor(attestorDeps{
		log: log.With("component", "attest"), now: now, key: key, self: p.self, p2p: network, db: db, book: book, gpus: gpus,
		cfg: cfg.Attest, beatEvery: cfg.BeatEvery, onSamples: p.history.add, shards: func() []auction.Shard { return p.Shards() },
		topics: p.lots.topics,
	}); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.firm = newFirmHolds(offer.FirmHold, offer.FirmHoldGPUs, now)
	host := hostFacts(offer, cfg.Home)
	p.cpu = newCPUPool(host, cpuShare(offer, gpus, log), offer.CPUFloorUSD)
	digestDue := newWakeup()
	if p.adv, err = newAdvertiser(offer, advertiserDeps{
		log: log.With("component", "advertiser"), now: now, key: key, p2p: network, db: db, gpus: gpus, host: host, version: cfg.Version,
		firmHeld: p.firm.heldNow, cpuOffer: p.cpu.offer, fingerprintID: p.attest.fingerprintID, onChange: digestDue.notify,
	}); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.digest = newDigester(digesterDeps{
		log: log.With("component", "digest"), now: now, key: key, p2p: network, republish: offer.Republish, ttl: offer.RecordTTL,
		capacity: p.adv.build, published: p.adv.Current, firmHeld: p.firm.heldNow, shardSize: func() int { return p.market.largestShard() }, due: digestDue,
		lots: p.lots.update, topics: p.lots.topics,
	})
	p.prestage = newPrestager(prestagerDeps{
		log: log.With("component", "prestage"), now: now, cfg: prestageConfig(offer), dir: offer.ModelsDir,
		held: p.adv.heldModels, fetched: p.adv.signal,
	})
	bidLog := log.With("component", "bidder")
	p.market = newMarketView(marketDeps{
		self: p.self.String(), log: bidLog, now: now, ttl: offer.RecordTTL, capacity: p.adv.build, firmHeld: p.firm.heldNow,
		shardView: deps.ShardView, notePrefix: deps.NotePrefix, priceIndex: deps.PriceIndex,
	})
	p.disk = newDiskGate(db.FreeSpace, log)
	p.services = newServiceBook(db.GetLease)
	if p.fwd, err = forward.NewServer(forward.ServerConfig{}, forward.ServerDeps{Logger: log, Registerer: deps.Registerer, Resolve: p.services.resolve}); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.cashier = newCashier(cashierDeps{
		log: log.With("component", "cashier"), now: now, key: key, p2p: network, db: db, book: book,
		notePaid: p.firm.notePaid, background: p.tasks.spawn, topics: p.lots.topics,
	})
	// The runner and the bidder call each other: the bidder starts on the
	// runner the leases it commits, and the runner hands their GPUs back
	// to the bidder when they end. The bidder is built second.
	var b *bidder
	p.runner = newLeaseRunner(runnerDeps{
		log: log.With("component", "leases"), now: now, db: db, book: book, p2p: network, ex: p.ex, cfg: cfg.Executor, gpus: gpus,
		egress: offer.Egress, leaseGPU: p.adv.Lease, releaseGPU: p.adv.Release, gpuLease: p.adv.leaseOf,
		jobEvent: p.attest.jobEvent, services: p.services, watchPay: p.cashier.payWatch, issueReceipt: p.cashier.issueLater,
		ended: func(l *store.Lease) { b.leaseEnded(l) }, tookUp: func(id string) { b.takeUps.tookUp(id) },
		abandoned: func(l *store.Lease) { b.noteAbandoned(l) },
	})
	b = newBidder(bidderDeps{
		log: bidLog, now: now, key: key, p2p: network, db: db, leases: book, gpus: gpus, policy: bidPolicy(offer), terms: cfg.Attest.Offer(), admit: deps.AdmitAward,
		firm: p.firm, cpu: p.cpu, takeUps: newTakeUps(takeUpLimits(cfg.TakeUp), now), capacity: p.adv.build, changed: p.adv.signal, diskOpen: p.disk.open,
		selected: p.market.selected, market: p.market.signal, askedModel: p.prestage.noteRFQ,
		start: p.runner.start, preempt: p.runner.preempt, background: p.tasks.spawn,
	})
	p.bidder = b
	if err := b.restore(); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	p.jobs = newJobServer(jobServerDeps{
		db: db, book: book, ex: p.ex,
		cancel: p.runner.cancelLease, acceptVoucher: p.cashier.acceptVoucher, serveAttest: p.attest.serveLease,
	})
	p.books = newBookkeeper(p.self.String(), now, db, gpus, cfg.Costs)
	return p, nil
}

// Run advertises, runs leases and attests until ctx ends, then waits for
// the work it started.
func (p *Provider) Run(ctx context.Context) error {
	p.tasks.start(ctx)
	p.group.Go(func() { p.adv.run(ctx) })
	p.group.Go(func() { p.runner.run(ctx) })
	p.group.Go(func() { p.attest.run(ctx) })
	p.group.Go(func() { p.digest.run(ctx) })
	p.group.Go(func() { p.prestage.run(ctx) })
	<-ctx.Done()
	p.group.Wait()
	p.tasks.wait()
	return nil
}

// Close undoes New, the last opened first (the executors). Run must have
// returned. It is idempotent.
func (p *Provider) Close() error {
	p.closeOnce.Do(func() {
		var errs []error
		for i := len(p.closers) - 1; i >= 0; i-- {
			errs = append(errs, p.closers[i]())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// ID is the provider's peer ID.
func (p *Provider) ID() peer.ID { return p.self }

// Offered is the provider's offer as configured, with the runtimes that
// can run here.
func (p *Provider) Offered() OfferConfig { return p.cfg.Offer }

// HandleRFQ answers one validated RFQ (a bid, or nothing).
func (p *Provider) HandleRFQ(ctx context.Context, msg p2p.Message) { p.bidder.onRFQ(ctx, msg) }

// RenterPaid reports whether renter paid for a lease this provider
// receipted: its RFQs are answered before those of renters without
// evidence (the node's RFQ slots).
func (p *Provider) RenterPaid(renter string) bool { return p.bidder.firm.hasPaid(renter) }

// HandleAward answers a sealed award (LeaseProto) with a tagged acceptance
// or decline.
func (p *Provider) HandleAward(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	return p.bidder.handleAward(ctx, from, req)
}

// AuctionClosed releases what this provider's bids for a finished auction
// still hold (the renter's signed award summary closes it).
func (p *Provider) AuctionClosed(sum *auction.AwardSummary) { p.bidder.auctionClosed(sum) }

// AbandonNoted takes another provider's verified note of an award its
// renter abandoned: what this provider bids and commits to that renter
// tightens (auction.TakeUpLimits).
func (p *Provider) AbandonNoted(n *auction.AbandonNote) {
	if n.Provider != p.self.String() {
		p.bidder.takeUps.onAbandonNote(n)
	}
}

// ServeJob serves a renter's job-protocol request about one of its leases.
func (p *Provider) ServeJob(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	return p.jobs.serve(ctx, from, req, send)
}

// HandleTunnel serves the forward protocol (route it with
// forward.TunnelLimits).
func (p *Provider) HandleTunnel(ctx context.Context, from peer.ID, header []byte, s io.ReadWriteCloser) error {
	return p.fwd.Handle(ctx, from, header, s)
}

// Capacity is the last published capacity record (nil before the first).
func (p *Provider) Capacity() *auction.Capacity { return p.adv.Current() }

// SealedCapacity is that record as signed and put in the DHT, which the
// node serves to peers checking its digest (nil before the first).
func (p *Provider) SealedCapacity() []byte { return p.adv.Sealed() }

// Shards are the RFQ shards this provider serves (by its GPUs' families
// and the CPU shard when it offers CPU-only work).
func (p *Provider) Shards() []auction.Shard { return p.market.shards() }

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

// LeaseEntries returns the chain entries that attest one of this
// provider's leases: the fingerprint in force, then the entries from the
// lease's start to its end.
func (p *Provider) LeaseEntries(l *store.Lease) ([][]byte, error) { return p.attest.leaseEntries(l) }

// Reconfigure applies the live keys of next (see LiveOfferKeys) and
// re-advertises; it returns the keys that changed, as "provider.KEY". A
// calendar that does not parse changes nothing.
func (p *Provider) Reconfigure(next OfferConfig) ([]string, error) {
	changed, err := p.adv.reconfigure(next)
	if err != nil {
		return nil, fmt.Errorf("provider.Reconfigure: %w", err)
	}
	if len(changed) > 0 {
		p.log.Info("provider reconfigured", "keys", changed)
	}
	return changed, nil
}

// SetCosts replaces the [costs] that Earnings prices with.
func (p *Provider) SetCosts(c costs.Config) error {
	if err := p.books.setCosts(c); err != nil {
		return fmt.Errorf("provider.SetCosts: %w", err)
	}
	return nil
}

// Earnings prices the provider's range [since, now): renters' paid
// vouchers (a lease's pay counts on the day it started) against the costs
// of [costs], per day and per GPU, from its own signed telemetry; the fill
// rate is GPU-hours that telemetry attributes to leases over the GPU-hours
// it attests at all.
func (p *Provider) Earnings(since time.Time) (Earnings, error) {
	e, err := p.books.earnings(since)
	if err != nil {
		return Earnings{}, fmt.Errorf("provider.Earnings: %w", err)
	}
	return e, nil
}

// GPUHistory is each GPU's telemetry over the last hour, oldest first,
// with the bucket still filling as the last point.
func (p *Provider) GPUHistory() []GPUSeries { return p.history.series(p.gpus) }

// DiskLow reports whether the store is short of space now, and so the
// provider is not bidding, with the free space in bytes (status says so).
func (p *Provider) DiskLow() (low bool, free uint64) { return p.disk.low() }
