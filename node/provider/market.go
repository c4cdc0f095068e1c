package provider

import (
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// priceIndexFor is how far back the price index looks for the scarcity
// cap, and how long one reading of it is reused.
const (
	priceIndexFor   = 24 * time.Hour
	priceIndexCache = 10 * time.Second
)

// marketSignal is what the bidder's scarcity pricing follows: the busy
// share of the GPUs in the RFQ's shards, as the digests show it, capped
// at the price index (the median cleared price for the family and tier).
// It is never nil: with no view yet the market counts as slack, so a
// provider never marks up on its own host's load alone.
func (p *Provider) marketSignal(rfq *auction.RFQ) *auction.MarketSignal {
	sig := &auction.MarketSignal{}
	if p.shardView == nil {
		return sig
	}
	var total, busy float64
	families := map[string]bool{}
	for _, s := range p.Shards() {
		if !auction.RFQOnShard(rfq, s) {
			continue
		}
		families[s.Family()] = true
		for _, d := range p.shardView(s) {
			for _, m := range d.Models {
				if auction.GPUFamily(m.Model) != s.Family() {
					continue
				}
				total += float64(m.Total)
				busy += float64(m.Total - m.Free - m.Held)
			}
		}
	}
	if total > 0 {
		sig.Utilization = busy / total
	}
	sig.IndexMicro = p.index.median(p, families, rfq.Tier)
	return sig
}

// indexCache keeps one reading of the price index.
type indexCache struct {
	mu    sync.Mutex
	at    time.Time
	stats []auction.PriceStat
}

// median is the GPU-weighted median cleared price of the best-traded
// model of families in tier (0 when none traded).
func (c *indexCache) median(p *Provider, families map[string]bool, tier auction.Tier) uint64 {
	if p.priceIndex == nil {
		return 0
	}
	now := p.now()
	c.mu.Lock()
	if now.Sub(c.at) > priceIndexCache {
		if stats, err := p.priceIndex(now.Add(-priceIndexFor), now); err == nil {
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
