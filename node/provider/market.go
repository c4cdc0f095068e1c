package provider

import (
	"log/slog"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// marketView is what the bidder knows of the market beyond this provider:
// trust's digests of its shards (whether it is selected to bid, and how
// busy the shard is) and the network's cleared prices (the scarcity cap).
type marketView struct {
	marketDeps
	index indexCache
	views shardViews
}

// marketDeps are where the market view reads from.
type marketDeps struct {
	self string
	log  *slog.Logger
	now  func() time.Time
	// ttl is provider.record_ttl (a live digest's lifetime).
	ttl time.Duration
	// capacity builds this provider's capacity record as of now.
	capacity func(seq uint64) (*auction.Capacity, error)
	// firmHeld are the GPUs under firm hold now.
	firmHeld func() map[string]bool
	// shardView is this node's digests of one shard (trust's book); nil:
	// no view, bid on every feasible RFQ.
	shardView func(s auction.Shard) []*auction.Digest
	// notePrefix is told each decision's always-bid prefix (trust's
	// prefix watch); nil: not told.
	notePrefix func(rfqID, renter string, always []string)
	// priceIndex is trust's price index; nil: no scarcity cap.
	priceIndex func(since, until time.Time) ([]auction.PriceStat, error)
}

func newMarketView(d marketDeps) *marketView {
	return &marketView{marketDeps: d, index: indexCache{source: d.priceIndex}, views: shardViews{wall: time.Now}}
}

// shards are the RFQ shards this provider serves (by its GPUs' families
// and the CPU shard when it offers CPU-only work).
func (m *marketView) shards() []auction.Shard {
	rec, err := m.capacity(1)
	if err != nil {
		return nil
	}
	return auction.ProviderShards(rec)
}

// largestShard is the number of providers, this one included, in the
// largest of its shards as trust's digest book holds them: what its
// digest refresh is stretched by (auction.DigestRefresh).
func (m *marketView) largestShard() int {
	n := 0
	for _, s := range m.shards() {
		n = max(n, m.shardSize(s, 1)) // the providers heard: its digest topic's
	}
	return n
}

// shardSize is the number of providers of shard s, this one included, as
// trust's digest book holds them (0 without a view), or, with lots above
// one, lots times those of this provider's lot if that is more
// (auction.ShardSizeFromLot): its lots are counted from it, and its
// digest refresh stretched by the providers it hears (lots 1).
func (m *marketView) shardSize(s auction.Shard, lots int) int {
	if m.shardView == nil {
		return 0
	}
	var peers []string
	for _, d := range m.shardView(s) {
		if d.Peer != m.self {
			peers = append(peers, d.Peer)
		}
	}
	return auction.ShardSizeFromLot(m.self, peers, lots)
}

// selected is the bounded-bidding rule: of the providers in the RFQ's
// shard, only the cheapest few and a random sample bid, so an auction
// costs the same whatever the shard's size. Every provider decides alone
// from the digests it holds, with the same rule the renter uses to know
// whom to expect. A provider decides on its own live state (its gossiped
// digest may be a second old), and one the digests cannot show fit (it
// would preempt bronze work, or it does not know its shard yet) bids:
// an extra bid costs little, a missing one can leave a job unfilled. One
// whose calendar will not let it take the job now is not selected: its
// Quote would refuse anyway.
func (m *marketView) selected(rfq *auction.RFQ, rfqID, topic string, look *rfqLook) bool {
	st, err := auction.ParseShardTopic(topic)
	if err != nil || st.Kind != auction.ShardTopicRFQ || m.shardView == nil {
		return true
	}
	mine, err := m.liveDigest(look)
	if err != nil {
		return true
	}
	if _, _, fits := auction.DigestFitsOn(rfq, mine, st.Shard); !fits {
		return true
	}
	// An RFQ on a lot's topic is an auction among that lot's members
	// (docs/protocol.md §3.6): the providers whose digests put the shard
	// in that many lots and who are in that lot. This one decides on its
	// own digest whatever count it last named: it hears only its lot.
	view := []*auction.Digest{mine}
	for _, d := range look.view(m, st.Shard) {
		if d.Peer != m.self && d.MemberOf(st) {
			view = append(view, d)
		}
	}
	ok, sel := auction.ShouldBid(auction.BidSelectInput{RFQ: rfq, RFQID: rfqID, Shard: st.Shard, Digests: view, Now: m.now()}, m.self)
	if m.notePrefix != nil {
		m.notePrefix(rfqID, rfq.Renter, sel.Always)
	}
	if !ok {
		m.log.Debug("not selected to bid", "rfq", lease.Short(rfqID), "feasible", sel.Feasible, "closing", sel.Closing, "p", sel.Probability)
	}
	return ok
}

// liveDigest is this provider's digest as of now (unsigned, not sent).
func (m *marketView) liveDigest(look *rfqLook) (*auction.Digest, error) {
	rec, err := look.record(m)
	if err != nil {
		return nil, err
	}
	return auction.NewDigest(auction.DigestInput{Capacity: rec, Held: m.firmHeld(), Seq: 1, Now: m.now(), TTL: m.ttl})
}

// rfqLook is what deciding on one RFQ reads of the market, each part at
// most once: the selection rule and the scarcity signal both read the
// RFQ's shard's digests (the last reading of them, market_views.go), and
// this provider's record. The zero value is ready; one RFQ's handling
// uses it, on one goroutine.
type rfqLook struct {
	views  map[auction.Shard][]*auction.Digest
	built  bool
	rec    *auction.Capacity // read only: the quote builds its own
	recErr error
}

// view is trust's digests of shard s, taken once per RFQ from the last
// reading of at most shardViewFor ago (market_views.go).
func (l *rfqLook) view(m *marketView, s auction.Shard) []*auction.Digest {
	if v, ok := l.views[s]; ok {
		return v
	}
	if l.views == nil {
		l.views = map[auction.Shard][]*auction.Digest{}
	}
	v := m.views.get(s, m.shardView)
	l.views[s] = v
	return v
}

// record is this provider's capacity record, built once per RFQ.
func (l *rfqLook) record(m *marketView) (*auction.Capacity, error) {
	if !l.built {
		l.rec, l.recErr = m.capacity(1)
		l.built = true
	}
	return l.rec, l.recErr
}

// priceIndexFor is how far back the price index looks for the scarcity
// cap, and how long one reading of it is reused.
const (
	priceIndexFor   = 24 * time.Hour
	priceIndexCache = 10 * time.Second
)

// signal is what the bidder's scarcity pricing follows: the busy share of
// the GPUs in the RFQ's shards, as the digests show it (hosts outside
// their calendar count for nothing, auction.Digest.Load), capped at the
// price index (the median cleared price for the family and tier). It is
// never nil: with no view yet the market counts as slack, so a provider
// never marks up on its own host's load alone.
func (m *marketView) signal(rfq *auction.RFQ, look *rfqLook) *auction.MarketSignal {
	sig := &auction.MarketSignal{}
	if m.shardView == nil {
		return sig
	}
	now := m.now()
	var total, busy int
	families := map[string]bool{}
	var shards []auction.Shard
	if rec, err := look.record(m); err == nil {
		shards = auction.ProviderShards(rec)
	}
	for _, s := range shards {
		if !auction.RFQOnShard(rfq, s) {
			continue
		}
		families[s.Family()] = true
		for _, d := range look.view(m, s) {
			b, n := d.Load(s.Family(), now)
			busy, total = busy+b, total+n
		}
	}
	if total > 0 {
		sig.Utilization = float64(busy) / float64(total)
	}
	sig.IndexMicro = m.index.median(now, families, rfq.Tier)
	return sig
}

// indexCache keeps one reading of the price index.
type indexCache struct {
	source func(since, until time.Time) ([]auction.PriceStat, error)

	mu    sync.Mutex
	at    time.Time
	stats []auction.PriceStat
}

// median is the GPU-weighted median cleared price of the best-traded
// model of families in tier (0 when none traded).
func (c *indexCache) median(now time.Time, families map[string]bool, tier auction.Tier) uint64 {
	if c.source == nil {
		return 0
	}
	c.mu.Lock()
	if now.Sub(c.at) > priceIndexCache {
		if stats, err := c.source(now.Add(-priceIndexFor), now); err == nil {
			c.stats, c.at = stats, now
		}
	}
	stats := c.stats
	c.mu.Unlock()
	var best auction.PriceStat
	for _, s := range stats {
		if s.Tier == tier && families[auction.GPUFamily(s.Model)] && s.GPUs > best.GPUs {
			best = s
		}
	}
	return best.MedianMicro
}
