package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	p      *Provider
	log    *slog.Logger
	now    func() time.Time
	runner *leaseRunner
	admit  AdmitAward
	policy auction.BidPolicy

	mu sync.Mutex
	// bids we sent and that may still be awarded, by record ID.
	bids map[string]sentBid
	// committed: GPU UUID -> the lease (pending or active) it belongs to.
	committed map[string]commitment
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

func newBidder(p *Provider, admit AdmitAward) *bidder {
	b := &bidder{
		p: p, log: p.log.With("component", "bidder"), now: p.now, admit: admit,
		policy: bidPolicy(p.cfg.Offer),
		bids:   map[string]sentBid{}, committed: map[string]commitment{},
	}
	b.runner = newLeaseRunner(p, p.ex, b.leaseEnded)
	return b
}

// restore rebuilds GPU commitments from stored leases after a restart.
func (b *bidder) restore() error {
	leases, err := b.p.db.Leases()
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range leases {
		if l.Side == lease.SideProvider && len(l.Receipt) > 0 && l.PaidMicro > 0 {
			b.p.firm.notePaid(l.Renter)
		}
		if l.Side != lease.SideProvider || lease.State(l.State).Terminal() {
			continue
		}
		if cpuOnly(l) {
			b.p.cpu.restore(l)
		}
		for _, g := range l.GPUs {
			b.committed[g] = commitment{leaseID: l.ID, tier: auction.Tier(l.Tier), renter: l.Renter, noticeSec: l.NoticeSec}
		}
	}
	return nil
}

func (b *bidder) leaseEnded(l *store.Lease) {
	if b.p.cpu.release(l.ID) {
		b.p.adv.signal()
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
	b.p.firm.expire(now)
	for id, sb := range b.bids {
		if sb.bid.Expired(now) {
			delete(b.bids, id)
		}
	}
}

// onRFQ answers one validated RFQ.
func (b *bidder) onRFQ(ctx context.Context, msg p2p.Message) {
	rfq, _, err := auction.OpenRFQ(msg.Data)
	if err != nil || rfq.Renter == b.p.ID().String() {
		return
	}
	rfqID := attest.RecordID(msg.Data).String()
	if !b.p.diskOpen() || !b.p.selected(rfq, rfqID, msg.Topic) {
		return
	}
	// quote takes any firm hold under a provisional ID in the same
	// critical section that chose the GPUs, so concurrent RFQs never get
	// the same firmly held GPU.
	provisional := "pending:" + rfqID
	bid, err := b.quote(rfq, rfqID, provisional)
	if err != nil {
		b.log.Debug("no bid", "rfq", lease.Short(rfqID), "reason", err)
		return
	}
	raw, err := auction.SealBid(bid, b.p.key)
	if err != nil {
		b.release(provisional)
		b.log.Warn("seal bid", "err", err)
		return
	}
	bidID := attest.RecordID(raw).String()
	b.mu.Lock()
	b.p.firm.rekey(provisional, bidID)
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
	if _, err := b.p.p2p.Request(sctx, renter, lease.BidProto, raw, lease.BidLimits); err != nil {
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
		b.p.p2p.Host().Peerstore().AddAddrs(p, out, 10*time.Minute)
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
		b.p.firm.release(id)
		delete(b.bids, id)
	}
}

func (b *bidder) release(bidID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.p.firm.release(bidID)
	delete(b.bids, bidID)
}

// quote snapshots this provider, asks the pure bidder policy for a bid
// and, for a renter with evidence, firmly holds the chosen GPUs under
// holdID. GPUs under another bid's firm hold are not offered.
func (b *bidder) quote(rfq *auction.RFQ, rfqID, holdID string) (*auction.Bid, error) {
	if b.p.adv == nil {
		return nil, ErrNotAdvertiser
	}
	capacity, err := b.p.adv.build(1)
	if err != nil {
		return nil, err
	}
	health := b.health()
	market := b.p.marketSignal(rfq)
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	held := b.p.firm.held(now)
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
	bid.Provider = b.p.ID().String()
	if held := b.p.firm.grant(rfq.Renter, holdID, bid.GPUs, now, time.UnixMilli(bid.ValidUntilMs)); len(held) > 0 {
		b.p.adv.signal() // the record shows them held
	}
	return &bid, nil
}

// health reads current telemetry for thermal and power headroom.
func (b *bidder) health() map[string]auction.GPUHealth {
	out := map[string]auction.GPUHealth{}
	if b.p.gpus == nil {
		return out
	}
	devs, _ := b.p.gpus.Devices()
	limit := map[string]float64{}
	for _, d := range devs {
		limit[d.UUID] = d.PowerLimitW
	}
	samples, _ := b.p.gpus.Sample(context.Background())
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

// handleAward answers a sealed award over lease.LeaseProto with a tagged
// acceptance or decline. Retries of an accepted award get the same
// acceptance back.
func (b *bidder) handleAward(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	aw, signer, err := auction.OpenAward(req)
	if err != nil {
		return nil, lease.Malformed(err)
	}
	if signer != from {
		return nil, lease.Malformed(fmt.Errorf("award signed by %s but sent by %s", signer, from))
	}
	if aw.Provider != b.p.ID().String() {
		return nil, errors.New("award names another provider")
	}
	awardID := attest.RecordID(req).String()
	if l, err := b.p.db.GetLease(awardID); err == nil {
		return append([]byte{lease.TagAccept}, l.Acceptance...), nil
	}
	if aw.Expired(b.now()) {
		return b.decline(awardID, "award expired")
	}
	if b.admit != nil {
		if err := b.admit(aw); err != nil {
			return b.decline(awardID, err.Error())
		}
	}
	// The inventory is read before the bidder's lock: the advertiser reads
	// firm holds, and they are changed under that lock.
	var inventory []auction.GPU
	if b.p.adv != nil {
		if capacity, err := b.p.adv.build(1); err == nil {
			inventory = capacity.GPUs
		}
	}
	l, preempt, reason := b.commit(aw, awardID, req, inventory)
	if reason != "" {
		return b.decline(awardID, reason)
	}
	for _, p := range preempt {
		b.sendPreempt(p, time.UnixMilli(l.StartsAtMs))
	}
	b.runner.start(l)
	return append([]byte{lease.TagAccept}, l.Acceptance...), nil
}

type preemption struct {
	leaseID   string
	renter    string
	noticeSec uint32
}

// commit re-checks an award against the bid it names and places it on
// GPUs free now (placeAward), and if that succeeds, countersigns and
// stores the lease, naming the GPUs committed, before anything runs.
func (b *bidder) commit(aw *auction.Award, awardID string, raw []byte, inventory []auction.GPU) (*store.Lease, []preemption, string) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	sb, ok := b.bids[aw.Bid]
	if !ok {
		return nil, nil, "unknown or expired bid"
	}
	if sb.bid.RFQ != aw.RFQ || sb.rfq.Renter != aw.Renter || sb.rfq.Tier != aw.Tier || sb.bid.JobCID != aw.JobCID {
		return nil, nil, "award does not match the bid"
	}
	if aw.MaxDurationSec == 0 || aw.MaxDurationSec > sb.rfq.MaxDurationSec {
		return nil, nil, fmt.Sprintf("award asks %ds, the RFQ allowed %ds", aw.MaxDurationSec, sb.rfq.MaxDurationSec)
	}
	if aw.NoticeSec != sb.bid.NoticeSec {
		return nil, nil, "award changes the promised preemption notice"
	}
	if aw.PriceMicro < sb.bid.PriceMicro {
		return nil, nil, fmt.Sprintf("price %d below the bid %d", aw.PriceMicro, sb.bid.PriceMicro)
	}
	if sb.rfq.Resources.GPUs == 0 {
		return b.commitCPU(aw, awardID, raw, sb, now) // cpu_commit.go
	}
	if len(aw.GPUs) == 0 {
		return nil, nil, "award names no GPUs"
	}
	pl, reason := b.placeAward(aw, sb, inventory, now)
	if reason != "" {
		return nil, nil, reason
	}
	start, preempt := pl.start, pl.preempt
	acc := &auction.LeaseAcceptance{
		V: auction.MessagesVersion, Provider: b.p.ID().String(), Award: awardID, GPUs: pl.gpus,
		AcceptedMs: now.UnixMilli(), StartsAtMs: start.UnixMilli(),
	}
	accRaw, err := auction.SealLeaseAcceptance(acc, b.p.key)
	if err != nil {
		return nil, nil, "internal: " + err.Error()
	}
	l := &store.Lease{
		ID: awardID, Side: "provider", Award: raw, Acceptance: accRaw, JobCID: aw.JobCID,
		Renter: aw.Renter, Provider: aw.Provider, GPUs: pl.gpus, PriceMicro: aw.PriceMicro, Model: sb.bid.Model,
		Tier: string(aw.Tier), NoticeSec: aw.NoticeSec, ExpectedSec: sb.rfq.ExpectedDurationSec,
		Runtime: sb.rfq.Runtime, State: lease.Awarded,
		StartsAtMs: start.UnixMilli(), EndsAtMs: start.Add(time.Duration(aw.MaxDurationSec) * time.Second).UnixMilli(),
	}
	// Durable before the acceptance leaves this node: a lease both sides
	// signed must survive a crash.
	if err := b.p.leases.Put(l); err != nil {
		return nil, nil, "internal: " + err.Error()
	}
	for _, g := range pl.gpus {
		b.committed[g] = commitment{leaseID: awardID, tier: aw.Tier, renter: aw.Renter, noticeSec: aw.NoticeSec}
		b.p.firm.take(g)
	}
	// Firm holds on the rest of the bid's GPUs stay until they end:
	// another part of the renter's micro-pool may still come.
	return l, preempt, ""
}

func (b *bidder) decline(awardID, reason string) ([]byte, error) {
	d := &auction.Decline{V: auction.MessagesVersion, Provider: b.p.ID().String(), Award: awardID, Reason: reason, AtMs: b.now().UnixMilli()}
	raw, err := auction.SealDecline(d, b.p.key)
	if err != nil {
		return nil, err
	}
	b.log.Info("award declined", "award", lease.Short(awardID), "reason", reason)
	return append([]byte{lease.TagDecline}, raw...), nil
}

// sendPreempt notifies a bronze renter and schedules the takeback. The
// notice promised in the bid counts from when the notice is issued, so if
// it leaves later than planned the takeback moves later too (the new lease
// waits for the GPUs) rather than shortening the promise.
func (b *bidder) sendPreempt(p preemption, at time.Time) {
	issued := b.now()
	if earliest := issued.Add(time.Duration(p.noticeSec) * time.Second); at.Before(earliest) {
		at = earliest
	}
	b.runner.preempt(p.leaseID, at)
	notice := &auction.PreemptNotice{
		V: auction.MessagesVersion, Provider: b.p.ID().String(), Lease: p.leaseID, NoticeSec: p.noticeSec,
		IssuedAtMs: issued.UnixMilli(), EffectiveAtMs: at.UnixMilli(), Reason: "GPUs needed for higher-tier work",
	}
	raw, err := auction.SealPreemptNotice(notice, b.p.key)
	if err != nil {
		b.log.Warn("seal preempt notice", "err", err)
		return
	}
	renter, err := peer.Decode(p.renter)
	if err != nil {
		return
	}
	// The notice is owed even if the award's stream is gone: retry a few
	// times within the notice period, for as long as the node runs.
	b.runner.background(func(rctx context.Context) {
		for attempt := range 3 {
			sctx, cancel := context.WithTimeout(rctx, lease.PreemptLimits.Timeout)
			_, err := b.p.p2p.Request(sctx, renter, lease.PreemptProto, raw, lease.PreemptLimits)
			cancel()
			if err == nil {
				return
			}
			b.log.Warn("preempt notice not delivered", "lease", lease.Short(p.leaseID), "attempt", attempt+1, "err", err)
			select {
			case <-rctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
}
