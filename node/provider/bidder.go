package provider

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// AdmitAward is an operator policy consulted before a provider
// countersigns an award (for example to refuse renters it distrusts);
// returning an error declines the award with that reason.
type AdmitAward func(aw *auction.Award) error

// bidder is the provider's side of the auction: it answers RFQs with
// signed bids, which hold nothing unless the renter earned a firm hold
// (firmHolds), and turns awards into countersigned leases after
// re-checking the GPUs under one lock, so that it never commits a GPU
// twice, substituting free GPUs of the same model for ones taken since the
// bid and preempting bronze leases with the promised notice when gold or
// silver work needs their GPUs.
type bidder struct {
	bidderDeps
	self string

	mu sync.Mutex
	// bids we sent and that may still be awarded, by record ID.
	bids map[string]sentBid
	// committed: GPU UUID -> the lease (pending or active) it belongs to.
	committed map[string]commitment
	// heard are the RFQs decided lately (rfq_heard.go).
	heard rfqsHeard
}

// bidderDeps are the bidder's collaborators.
type bidderDeps struct {
	log    *slog.Logger
	now    func() time.Time
	key    crypto.PrivKey
	p2p    *p2p.Node
	db     *store.DB
	leases *lease.Book
	gpus   gpu.Backend
	policy auction.BidPolicy
	// terms are the lease terms every bid offers ([attest]); a lease runs
	// by the terms its award accepted.
	terms auction.LeaseTerms
	// admit is the operator's award admission policy; nil admits all.
	admit AdmitAward
	// firm are the firm holds and cpu the CPU share; the bidder changes
	// them under its lock.
	firm *firmHolds
	cpu  *cpuPool
	// takeUps bound what renters' awards hold before they are taken up.
	takeUps *takeUps
	// capacity builds the capacity record as of now; changed re-publishes
	// it (GPUs held, the CPU share leased or freed).
	capacity func(seq uint64) (*auction.Capacity, error)
	changed  func()
	// diskOpen reports whether the store has room for new leases.
	diskOpen func() bool
	// selected is the bounded-bidding rule and market the scarcity
	// signal (marketView).
	selected func(rfq *auction.RFQ, rfqID, topic string, look *rfqLook) bool
	market   func(rfq *auction.RFQ, look *rfqLook) *auction.MarketSignal
	// askedModel records the model an RFQ names (the pre-stager); nil:
	// not recorded.
	askedModel func(rfq *auction.RFQ)
	// start runs a countersigned lease; preempt stops one for higher-tier
	// work at the end of its notice (the lease runner).
	start   func(l *store.Lease)
	preempt func(leaseID string, at time.Time)
	// background runs work that outlives the award's call (notices).
	background func(fn func(ctx context.Context))
}

type sentBid struct {
	bid *auction.Bid
	rfq *auction.RFQ
}

type commitment struct {
	leaseID   string
	tier      auction.Tier
	renter    string
	noticeSec uint32
}

// bidValidity is how long a bid outlives the bid window. A bid holds no
// GPU for that time (see firmHolds), so it need not be short: it only has
// to outlast the renter's way through declines to the next-best bids,
// which under load takes seconds.
const bidValidity = 20 * time.Second

// bidPolicy is the default policy with the operator's promised notice.
func bidPolicy(c OfferConfig) auction.BidPolicy {
	p := auction.DefaultBidPolicy()
	p.NoticeSec = uint32(c.PreemptNotice / time.Second)
	p.BidValidity = bidValidity
	return p
}

func newBidder(d bidderDeps) *bidder {
	if d.takeUps == nil {
		d.takeUps = newTakeUps(auction.DefaultTakeUpLimits(), d.now)
	}
	return &bidder{bidderDeps: d, self: d.p2p.ID().String(), bids: map[string]sentBid{}, committed: map[string]commitment{}}
}

// restore rebuilds GPU commitments from stored leases after a restart.
func (b *bidder) restore() error {
	leases, err := b.db.Leases()
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range leases {
		if l.Side == lease.SideProvider && len(l.Receipt) > 0 && l.PaidMicro > 0 {
			b.firm.notePaid(l.Renter)
		}
		if l.Side != lease.SideProvider || lease.State(l.State).Terminal() {
			continue
		}
		if cpuOnly(l) {
			b.cpu.restore(l)
		}
		for _, g := range l.GPUs {
			b.committed[g] = commitment{leaseID: l.ID, tier: auction.Tier(l.Tier), renter: l.Renter, noticeSec: l.NoticeSec}
		}
	}
	return nil
}

// leaseEnded frees what an ended lease held: its part of the CPU share
// and its GPUs' commitments.
func (b *bidder) leaseEnded(l *store.Lease) {
	b.takeUps.tookUp(l.ID)
	if b.cpu.release(l.ID) {
		b.changed()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range l.GPUs {
		if c, ok := b.committed[g]; ok && c.leaseID == l.ID {
			delete(b.committed, g)
		}
	}
}

// expire drops firm holds and bids past their validity. Callers hold b.mu.
func (b *bidder) expire(now time.Time) {
	b.firm.expire(now)
	for id, sb := range b.bids {
		if sb.bid.Expired(now) {
			delete(b.bids, id)
		}
	}
}

// onRFQ answers one validated RFQ.
func (b *bidder) onRFQ(ctx context.Context, msg p2p.Message) {
	rfq, ok := msg.Record.(*auction.RFQ) // the RFQ the topic's validator opened
	if !ok {
		var err error
		if rfq, _, err = auction.OpenRFQ(msg.Data); err != nil {
			return
		}
	}
	if rfq.Renter == b.self {
		return
	}
	rfqID := attest.RecordID(msg.Data).String()
	if !b.heard.first(rfqID, b.now(), time.UnixMilli(rfq.ExpiresAtMs)) {
		return // heard on another topic: decided once
	}
	if b.askedModel != nil {
		b.askedModel(rfq) // demand, whether or not this provider bids
	}
	var look rfqLook // the market as this RFQ's decision reads it, once
	if !b.diskOpen() || !b.selected(rfq, rfqID, msg.Topic, &look) {
		return
	}
	// quote takes any firm hold under a provisional ID in the same
	// critical section that chose the GPUs, so concurrent RFQs never get
	// the same firmly held GPU.
	provisional := "pending:" + rfqID
	bid, err := b.quote(rfq, rfqID, provisional, &look)
	if err != nil {
		b.log.Debug("no bid", "rfq", lease.Short(rfqID), "reason", err)
		return
	}
	raw, err := auction.SealBid(bid, b.key)
	if err != nil {
		b.release(provisional)
		b.log.Warn("seal bid", "err", err)
		return
	}
	bidID := attest.RecordID(raw).String()
	b.mu.Lock()
	b.firm.rekey(provisional, bidID)
	b.bids[bidID] = sentBid{bid: bid, rfq: rfq}
	b.mu.Unlock()

	renter, err := peer.Decode(rfq.Renter)
	if err != nil {
		b.release(bidID)
		return
	}
	b.addAddrs(renter, rfq.Addrs)
	sctx, cancel := context.WithTimeout(ctx, lease.BidLimits.Timeout)
	defer cancel()
	if _, err := b.p2p.Request(sctx, renter, lease.BidProto, raw, lease.BidLimits); err != nil {
		b.log.Debug("bid not delivered", "rfq", lease.Short(rfqID), "err", err)
		b.release(bidID)
		return
	}
	b.log.Debug("bid sent", "rfq", lease.Short(rfqID), "gpus", len(bid.GPUs), "price", bid.PriceMicro)
}

// addAddrs teaches the peerstore the renter's addresses from its RFQ.
func (b *bidder) addAddrs(p peer.ID, addrs []string) {
	var out []ma.Multiaddr
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			continue
		}
		if info, err := peer.AddrInfoFromP2pAddr(a); err == nil && info.ID == p {
			out = append(out, info.Addrs...)
		}
	}
	if len(out) > 0 {
		b.p2p.Host().Peerstore().AddAddrs(p, out, 10*time.Minute)
	}
}

// auctionClosed forgets our bids for a finished auction and releases
// their firm holds. Only the RFQ's own renter can close it (the summary is
// signed by it); GPUs a winning bid leased were already moved to the lease
// by commit.
func (b *bidder) auctionClosed(sum *auction.AwardSummary) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, sb := range b.bids {
		if sb.bid.RFQ != sum.RFQ || sb.rfq.Renter != sum.Renter {
			continue
		}
		b.firm.release(id)
		delete(b.bids, id)
	}
}

func (b *bidder) release(bidID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.firm.release(bidID)
	delete(b.bids, bidID)
}

// quote snapshots this provider, asks the pure bidder policy for a bid
// and, for a renter with evidence, firmly holds the chosen GPUs under
// holdID. GPUs under another bid's firm hold are not offered.
func (b *bidder) quote(rfq *auction.RFQ, rfqID, holdID string, look *rfqLook) (*auction.Bid, error) {
	if b.capacity == nil {
		return nil, ErrNotAdvertiser
	}
	capacity, err := b.capacity(1)
	if err != nil {
		return nil, err
	}
	// A renter the take-up limits bound is offered no more than its
	// allowance (auction.TakeUpLimits): a bid for fewer GPUs than asked,
	// which the renter may pool with others.
	allow, why := b.takeUps.allowance(rfq.Renter, len(capacity.GPUs), b.firm.hasPaid(rfq.Renter))
	if allow == 0 {
		return nil, errors.New(why)
	}
	if rfq.Resources.GPUs > 0 && uint64(allow) < uint64(rfq.Resources.GPUs) {
		bounded := *rfq
		bounded.Resources.GPUs = uint32(allow)
		rfq = &bounded
	}
	health := b.health()
	market := b.market(rfq, look)
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	held := b.firm.held(now)
	bronze := map[string]auction.BronzeLease{}
	for i := range capacity.GPUs {
		g := &capacity.GPUs[i]
		c, ok := b.committed[g.UUID]
		g.Free = !ok
		if ok && c.tier == auction.TierBronze {
			bronze[g.UUID] = auction.BronzeLease{LeaseID: c.leaseID, NoticeSec: c.noticeSec}
		}
	}
	q, err := auction.Quote(auction.QuoteInput{
		RFQ: rfq, RFQID: rfqID, Capacity: capacity, Held: held, Bronze: bronze, Telemetry: health, Now: now, Policy: b.policy,
		Market: market,
	})
	if err != nil {
		return nil, err
	}
	bid := q.Bid
	bid.Provider = b.self
	bid.SetTerms(b.terms)
	if held := b.firm.grant(rfq.Renter, holdID, bid.GPUs, now, time.UnixMilli(bid.ValidUntilMs)); len(held) > 0 {
		b.changed() // the record shows them held
	}
	return &bid, nil
}

// health reads current telemetry for thermal and power headroom.
func (b *bidder) health() map[string]auction.GPUHealth {
	out := map[string]auction.GPUHealth{}
	if b.gpus == nil {
		return out
	}
	devs, _ := b.gpus.Devices()
	limit := map[string]float64{}
	for _, d := range devs {
		limit[d.UUID] = d.PowerLimitW
	}
	samples, _ := b.gpus.Sample(context.Background())
	for _, s := range samples {
		h := auction.GPUHealth{PowerLimitW: limit[s.UUID]}
		if s.Has(gpu.MetricTemperature) {
			h.TemperatureC = s.TemperatureC
		}
		if s.Has(gpu.MetricPower) {
			h.PowerW = s.PowerW
		}
		if s.Has(gpu.MetricThrottle) {
			h.ThrottleReasons = uint64(s.ThrottleReasons)
		}
		out[s.UUID] = h
	}
	return out
}
