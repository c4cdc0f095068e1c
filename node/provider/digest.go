package provider

import (
	"context"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// digestMinGap bounds how often a provider gossips a changed digest: a
// burst of leases and releases costs one digest a second, not one each.
const digestMinGap = time.Second

// digester gossips this provider's signed capacity digest on the digest
// topic of each of its shards: when its capacity changes (after the
// advertiser publishes) and on the republish timer, well within the
// digest's lifetime.
type digester struct {
	p       *Provider
	changed chan struct{}

	mu  sync.Mutex
	seq uint64
}

func newDigester(p *Provider) *digester {
	return &digester{p: p, changed: make(chan struct{}, 1)}
}

// signal asks for a fresh digest.
func (d *digester) signal() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

func (d *digester) run(ctx context.Context) {
	if err := d.p.p2p.WaitReady(ctx); err != nil {
		return
	}
	every := max(d.p.cfg.Offer.Republish/2, time.Second)
	// Right after start the shard's mesh is still forming and a digest
	// reaches few peers: send it again a few times, sooner.
	early := []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastSent time.Time
	for {
		d.publish(ctx)
		lastSent = time.Now()
		next := every
		if len(early) > 0 {
			next, early = min(early[0], every), early[1:]
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.changed:
			if gap := digestMinGap - time.Since(lastSent); gap > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(gap):
				}
			}
		}
	}
}

// publish builds, signs and gossips one digest.
func (d *digester) publish(ctx context.Context) {
	rec, err := d.p.adv.build(1)
	if err != nil {
		d.p.log.Warn("build digest", "err", err)
		return
	}
	now := d.p.now()
	d.mu.Lock()
	d.seq = max(d.seq+1, uint64(now.UnixMilli()))
	seq := d.seq
	d.mu.Unlock()
	if cur := d.p.adv.Current(); cur != nil {
		rec.Seq = cur.Seq
	}
	dg, err := auction.NewDigest(auction.DigestInput{
		Capacity: rec, Held: d.p.FirmHeld(), Seq: seq, Now: now, TTL: d.p.cfg.Offer.RecordTTL,
	})
	if err != nil {
		d.p.log.Warn("build digest", "err", err)
		return
	}
	raw, err := auction.SealDigest(dg, d.p.key)
	if err != nil {
		d.p.log.Warn("seal digest", "err", err)
		return
	}
	for _, s := range dg.Shards() {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := d.p.p2p.Publish(pctx, s.DigestTopic(), raw, 0); err != nil {
			d.p.log.Debug("publish digest", "shard", s, "err", err)
		}
		cancel()
	}
}

// Shards are the RFQ shards this provider serves (by its GPUs' families
// and the CPU shard when it offers CPU-only work).
func (p *Provider) Shards() []auction.Shard {
	rec, err := p.adv.build(1)
	if err != nil {
		return nil
	}
	return auction.ProviderShards(rec)
}

// selected is the bounded-bidding rule: of the providers in the RFQ's
// shard, only the cheapest few and a random sample bid, so an auction
// costs the same whatever the shard's size. Every provider decides alone
// from the digests it holds, with the same rule the renter uses to know
// whom to expect. A provider decides on its own live state (its gossiped
// digest may be a second old), and one the digests cannot show fit (it
// would preempt bronze work, or it does not know its shard yet) bids:
// an extra bid costs little, a missing one can leave a job unfilled.
func (p *Provider) selected(rfq *auction.RFQ, rfqID, topic string) bool {
	st, err := auction.ParseShardTopic(topic)
	if err != nil || st.Kind != auction.ShardTopicRFQ || p.shardView == nil {
		return true
	}
	mine, err := p.liveDigest()
	if err != nil {
		return true
	}
	if _, _, fits := auction.DigestFitsOn(rfq, mine, st.Shard); !fits {
		return true
	}
	self := p.self.String()
	view := []*auction.Digest{mine}
	for _, d := range p.shardView(st.Shard) {
		if d.Peer != self {
			view = append(view, d)
		}
	}
	ok, sel := auction.ShouldBid(auction.BidSelectInput{RFQ: rfq, RFQID: rfqID, Shard: st.Shard, Digests: view}, self)
	if !ok {
		p.log.Debug("not selected to bid", "rfq", lease.Short(rfqID), "feasible", sel.Feasible, "p", sel.Probability)
	}
	return ok
}

// liveDigest is this provider's digest as of now (unsigned, not sent).
func (p *Provider) liveDigest() (*auction.Digest, error) {
	rec, err := p.adv.build(1)
	if err != nil {
		return nil, err
	}
	now := p.now()
	return auction.NewDigest(auction.DigestInput{Capacity: rec, Held: p.FirmHeld(), Seq: 1, Now: now, TTL: p.cfg.Offer.RecordTTL})
}
