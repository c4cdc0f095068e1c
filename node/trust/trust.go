// Package trust is what a node believes about other peers: the
// reputation book folded from its own evidence (lease outcomes, receipts,
// heartbeat uptime, fraud proofs), the handling of attest and fraud gossip
// (equivocation caught, offenders blocked), the market view and search over
// providers' signed capacity digests and records, the price index from
// award summaries, the RFQ gate, and attestation export. Keys are free, so
// a claim counts only as far as evidence this node checked backs it
// (evidence.go). It knows neither the provider nor the renter; the node
// hands their needs to it through callbacks.
package trust

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
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// MaxClockSkew is how far in the future a signed message may be dated.
const MaxClockSkew = time.Minute

// Config is what trust needs of the node's configuration.
type Config struct {
	// ReliabilityPrior is the reliability assumed for a provider with no
	// history (market.reliability_prior).
	ReliabilityPrior float64
	// Refresh: cached capacity records older than this are re-fetched
	// before a search (market.refresh).
	Refresh time.Duration
	// SearchTimeout bounds one market search (market.search_timeout).
	SearchTimeout time.Duration
	// BeatEvery is the heartbeat slot (p2p.telemetry_gossip_every,
	// attest.BeatSlot): a provider gossips one heartbeat per slot, this
	// node admits one, and counts uptime in slots.
	BeatEvery time.Duration
	// FraudRepeatEvery: a fraud proof held for good that nobody was heard
	// publishing this long is published again (p2p.fraud_repeat_every;
	// 0: DefaultFraudRepeatEvery; fraud_repeat.go).
	FraudRepeatEvery time.Duration
}

// Deps are trust's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Clock dates evidence and fraud proofs; nil: time.Now.
	Clock func() time.Time
	Key   crypto.PrivKey
	P2P   *p2p.Node
	Store *store.DB
	// OnSummary is told of every verified award summary (a provider
	// releases what its bids for that auction still hold); nil: nobody.
	OnSummary func(sum *auction.AwardSummary)
	// OnAbandon is told of every verified abandon note of another
	// provider (a provider tightens what it commits to the renter); nil:
	// nobody.
	OnAbandon func(n *auction.AbandonNote)
	// OnShard is told of each shard the first time a digest names it
	// (a renter follows the shard's digest topic); nil: nobody.
	OnShard func(s auction.Shard)
	// OnLots is told when a backed provider's digest first names a lot
	// count of one of its shards, so that a renter follows those lots at
	// once rather than at its next look (docs/protocol.md §3.6).
	OnLots func()
	// SyncShards are the shards whose digests this node syncs (a
	// provider's own); nil: every shard (a renter's whole market view).
	SyncShards func() []auction.Shard
	// LeaseEntries returns this node's own chain entries that attest a
	// provider-side lease (nil on nodes that keep no chain).
	LeaseEntries func(l *store.Lease) ([][]byte, error)
	// Replay re-runs the job of a wrong-result proof to judge it; nil:
	// this node does not judge them (it neither forwards nor applies one).
	Replay Replay
	// OwnRecord returns this node's current sealed capacity record (nil
	// while none is published), served to peers checking its digest; nil:
	// this node publishes none.
	OwnRecord func() []byte
	// Registerer gets trust's metrics; nil: none.
	Registerer prometheus.Registerer
}

// Trust is the running trust room.
type Trust struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	key  crypto.PrivKey
	self peer.ID
	// selfStr is self as the records spell it (base58), computed once:
	// comparing each digest, voucher and summary with self.String() was
	// a base58 encoding each time, 3 % of a 50-node cluster's CPU.
	selfStr string
	p2p     *p2p.Node
	db      *store.DB

	beats beatSlots // one heartbeat per provider and slot (shard_attest.go)

	onSummary    func(sum *auction.AwardSummary)
	onAbandon    func(n *auction.AbandonNote)
	onShard      func(s auction.Shard)
	onLots       func()
	lotPairs     map[lotPair]bool // guarded by shardsMu
	syncShards   func() []auction.Shard
	shardsMu     sync.Mutex
	shards       map[auction.Shard]bool
	grewAt       map[auction.Shard]time.Time // when a shard's view last gained a backed provider
	leaseEntries func(l *store.Lease) ([][]byte, error)

	rep *ReputationBook
	// receipts holds the receipts reputation and renown count, bounded
	// (receipt_book.go).
	receipts        *receiptBook
	receiptsDropped *prometheus.CounterVec
	// provenFrauds are the stored fraud proofs as checked, by record ID;
	// strangerFrauds is maxStrangerFrauds and forGoodFrauds
	// maxFraudsForGood (a test's smaller).
	fraudsMu       sync.Mutex
	provenFrauds   map[string]provenFraud
	strangerFrauds int
	forGoodFrauds  int
	uptimeRows     int // maxUptimeRows (a test's smaller)
	// checkTimeout is recordCheckTimeout (a test's shorter).
	checkTimeout  time.Duration
	fraudsDemoted prometheus.Counter
	// repeats and publish: fraud proofs repeated for nodes that missed
	// them (fraud_repeat.go); publish is p2p's, a test's fake.
	repeats        fraudRepeats
	sightings      chan sighting // blocked offenders' digests seen (fraud_sighted.go)
	publish        func(ctx context.Context, topic string, data []byte) error
	fraudsRepeated prometheus.Counter
	// summaries holds the award summaries the price index reads, bounded
	// (summary_book.go).
	summaries        *summaryBook
	summariesDropped *prometheus.CounterVec
	rfqsDropped      *prometheus.CounterVec
	market           *market
	digests          *auction.DigestBook
	sync             *digestSync

	// ownRecord and recordRates serve records to peers checking digests
	// (records_serve.go).
	ownRecord   func() []byte
	recordRates *recordRates
	// recordChecks counts record checks by where the record came from
	// (records.go).
	recordChecks *prometheus.CounterVec
	recordAsks   *prometheus.CounterVec

	// ev is the evidence behind each provider's digest (evidence.go);
	// checks queues record checks (records.go); newPeers are the sources'
	// budgets of unchecked providers; expect follows this renter's
	// auctions' expected bidders (expect.go); renown is the renters with
	// receipts (renown.go).
	ev       *evidenceBook
	checks   chan string
	newPeers *newPeerBudget
	// lateDigests are the older digests each peer may pass on uncharged
	// past auction.DigestCrossing (digests.go).
	lateDigests *budgets
	expect      *expectations
	renown      *renown
	// prefixes are this provider's always-bid prefixes waiting for their
	// RFQs' summaries (prefix_watch.go).
	prefixes       *prefixWatch
	prefixMisses   prometheus.Counter
	prefixAnswers  prometheus.Counter
	prefixSilenced prometheus.Counter
	fetchRecord    func(ctx context.Context, p peer.ID) (*auction.Capacity, error)

	// replay judges wrong-result proofs; replays bounds and remembers its
	// re-runs (wrong_result.go).
	replay  Replay
	replays *replayBook
}

// New builds the trust room.
func New(cfg Config, deps Deps) (*Trust, error) {
	if deps.Key == nil || deps.P2P == nil || deps.Store == nil {
		return nil, errors.New("trust.New: key, p2p and store are required")
	}
	t := &Trust{
		cfg: cfg, log: deps.Logger, now: deps.Clock, key: deps.Key, self: deps.P2P.ID(), selfStr: deps.P2P.ID().String(),
		p2p: deps.P2P, db: deps.Store, onSummary: deps.OnSummary, onAbandon: deps.OnAbandon, leaseEntries: deps.LeaseEntries,
		replay: deps.Replay, replays: newReplayBook(), ownRecord: deps.OwnRecord, recordRates: newRecordRates(),
		onShard: deps.OnShard, onLots: deps.OnLots, lotPairs: map[lotPair]bool{}, syncShards: deps.SyncShards, shards: map[auction.Shard]bool{}, grewAt: map[auction.Shard]time.Time{},
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.now == nil {
		t.now = time.Now
	}
	t.rep = newReputationBook(t)
	t.publish = func(ctx context.Context, topic string, data []byte) error { return t.p2p.Publish(ctx, topic, data, 0) }
	t.strangerFrauds, t.forGoodFrauds, t.uptimeRows = maxStrangerFrauds, maxFraudsForGood, maxUptimeRows
	t.checkTimeout = recordCheckTimeout
	t.sightings = make(chan sighting, maxSightings)
	t.receiptsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "idlegrid_trust_receipts_dropped_total",
		Help: "Other renters' gossiped receipts not kept (withheld on arrival, or pushed out by heavier ones later), by reason: pair (lighter than the 16 heaviest of its provider and renter, which bound its weight), provider (lighter than the 2,048 heaviest of its provider), full (the lightest when 65,536 were held), lease (a second receipt for one lease), self (a provider's receipt to itself), unbacked (of a provider this node never checked a record of). A steady rate of full, provider, self or unbacked means a flood of receipts.",
	}, []string{"reason"})
	t.receipts = newReceiptBook(t.rep.cfg, t.selfStr, func(reason string) { t.receiptsDropped.WithLabelValues(reason).Inc() })
	t.summariesDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "idlegrid_trust_summaries_dropped_total",
		Help: "Other nodes' gossiped award summaries not kept for the price index (on arrival, or pushed out later), by reason: unbacked (of a provider this node never checked a record of: it would weigh nothing), provider (older than its provider's newest 1,024), full (the oldest when 65,536 were held). A steady rate of unbacked or provider means a flood of summaries.",
	}, []string{"reason"})
	t.fraudsRepeated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "idlegrid_trust_fraud_repeats_total",
		Help: "Fraud proofs this node published again because nobody was heard publishing them for p2p.fraud_repeat_every, or because a peer passed on the offender's digest (it had not heard the proof): for nodes that were offline or new when the proof went round.",
	})
	t.fraudsDemoted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "idlegrid_trust_frauds_demoted_total",
		Help: "Fraud proofs this node kept for good that made room for a newer one (8,192 are kept for good): kept 30 days from then, their offenders refused as long. Those against providers this node never dealt with go first, the oldest first. A steady rate means keys with capacity records proving themselves cheats, a flood.",
	})
	t.summaries = newSummaryBook(t.selfStr, func(reason string) { t.summariesDropped.WithLabelValues(reason).Inc() })
	t.digests = auction.NewDigestBook(auction.MaxBookDigests)
	t.market = newMarket(t)
	t.market.fromDigests = t.digestOffers
	t.sync = newDigestSync()
	t.ev, t.checks, t.newPeers, t.expect = newEvidenceBook(), make(chan string, recordCheckQueue), newNewPeerBudget(), newExpectations()
	t.lateDigests = newBudgets(lateDigestsRate, lateDigestsBurst, newPeersKeys)
	t.renown = newRenown()
	t.prefixes = newPrefixWatch()
	t.prefixMisses = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "idlegrid_trust_prefix_misses_total",
		Help: "Providers this provider's bid decision put in an RFQ's always-bid prefix that the RFQ's award summary did not list as bidders. Each is a miss; a provider that misses more often than it answers drops out of the bid-selection view for 10 minutes (silent). A steady rate means providers that claim cheap offers and never bid.",
	})
	t.prefixAnswers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "idlegrid_trust_prefix_answers_total",
		Help: "Providers of an RFQ's always-bid prefix (this provider's decision) that the RFQ's award summary listed as bidders.",
	})
	t.prefixSilenced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "idlegrid_trust_prefix_silenced_total",
		Help: "Providers that went silent at this node by the prefix watch: their misses outran their answers by 3, so they left its bid-selection view for 10 minutes.",
	})
	t.fetchRecord = t.market.lookup
	t.recordChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "idlegrid_trust_record_checks_total",
		Help: "Capacity record checks of providers' digests, by where the record came from: taken (with a sync page), peer (asked of the peer that passed the digest on, or of the provider), dht (a lookup), unbacked (no record backed the digest), timed_out (the lookup ran out of time: the digest is dropped, nobody charged), no_routes (no DHT peers yet; tried again).",
	}, []string{"via"})
	t.recordAsks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "idlegrid_trust_record_asks_total",
		Help: "Capacity records asked of a peer for a record check, by outcome: backed, not_backing (a record that does not serve every shard the digest claims), none (the peer holds none), failed (the request failed or was refused), not_asked (not connected, not serving records, or charged lately).",
	}, []string{"outcome"})
	t.rfqsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "idlegrid_trust_rfqs_dropped_total",
		Help: "RFQs the gossip edge check dropped, by reason: forwarder_budget (over the forwarding peer's or its network's RFQ rate: withheld, nobody charged), other_version (a later release's: skipped), malformed (undecodable, or not signed by its renter: the forwarder charged 10 points), expired (expired in transit, as a relay minutes behind may pass it on: uncharged within each forwarding peer's allowance of 16, one more every 10 s, then 1 point), stale and future (dated as no honest relay passes on: 10 points), replay (seen on this topic before: 1 point), renter_rate (over its renter's RFQ rate: 1 point). Expired RFQs mean gossip runs late somewhere; a steady rate of malformed, stale, future or replay means a peer sending them on purpose.",
	}, []string{"reason"})
	for _, c := range []**prometheus.CounterVec{&t.recordChecks, &t.recordAsks, &t.receiptsDropped, &t.summariesDropped, &t.rfqsDropped} {
		if err := register(deps.Registerer, c); err != nil {
			return nil, fmt.Errorf("trust.New: %w", err)
		}
	}
	for _, c := range []*prometheus.Counter{&t.fraudsRepeated, &t.fraudsDemoted, &t.prefixMisses, &t.prefixAnswers, &t.prefixSilenced} {
		if err := register(deps.Registerer, c); err != nil {
			return nil, fmt.Errorf("trust.New: %w", err)
		}
	}
	return t, nil
}

// register registers *c with reg (nil: none), or takes the collector
// already registered in its place.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if reg == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	err := reg.Register(*c)
	if errors.As(err, &are) {
		if ex, ok := are.ExistingCollector.(C); ok {
			*c = ex
			return nil
		}
	}
	return err
}

// Run keeps the market view until ctx ends: digest sync, record checks,
// pruning, the auctions' expectations, the renters' renown and the
// providers' reputation.
func (t *Trust) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { t.runSync(ctx) })
	wg.Go(func() { t.runRecordChecks(ctx) })
	wg.Go(func() { t.pruneDigests(ctx) })
	wg.Go(func() { t.everySecond(ctx) })
	wg.Go(func() { t.rep.runFolds(ctx) })
	wg.Go(func() { t.runFraudRepeats(ctx) })
	wg.Go(func() { t.runSightings(ctx) })
	wg.Wait()
	return nil
}

// everySecond settles the auctions past their deadline and refreshes the
// renters' renown now and then.
func (t *Trust) everySecond(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.settleExpectations()
		if n%renownEvery == 0 {
			t.refreshRenown()
		}
	}
}

// RFQGate is the RFQ edge check with this node's view of renters (a renter
// with receipts gets the higher rate) and of forwarding peers' networks.
func (t *Trust) RFQGate() *RFQGate {
	return NewRFQGate(RFQGateDeps{Now: t.now, Subnet: t.p2p.Subnet, Renowned: t.Renowned,
		Dropped: func(reason string) { t.rfqsDropped.WithLabelValues(reason).Inc() }})
}

// ID is this node's peer ID.
func (t *Trust) ID() peer.ID { return t.self }

// Reputation is the reputation book: one provider's score, every score
// for the matcher, and invalidation when an outcome changes.
func (t *Trust) Reputation() *ReputationBook { return t.rep }
