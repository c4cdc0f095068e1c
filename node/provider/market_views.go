package provider

import (
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// shardViewFor is how long one reading of a shard's digests serves the
// RFQs that come after it. Trust assembles the reading from its whole
// book, sorted, with an evidence lookup per provider: O(the shard's
// providers) per read. Read per RFQ, on every provider of the shard, that
// is the shard's size times its RFQ rate: at 200 nodes 4 % of all CPU,
// and at the scale the model plans for (20,000 providers in a shard, 100
// RFQs a second) two million lookups a second on each provider. A
// second's staleness is far below the digests' own: a digest is
// refreshed every few minutes, and each provider's view already differs
// from the renter's by the digests in flight.
const shardViewFor = time.Second

// shardViews keeps the last reading of each shard's digests. The slices
// are shared by the RFQs that read them, which only read them.
type shardViews struct {
	// wall is the clock the readings age by (time.Now; a test's own).
	wall func() time.Time

	mu sync.Mutex
	by map[auction.Shard]shardReading
}

type shardReading struct {
	at      time.Time
	digests []*auction.Digest
}

// get returns shard s's digests: the last reading while it is younger
// than shardViewFor, else a new one from read.
func (v *shardViews) get(s auction.Shard, read func(auction.Shard) []*auction.Digest) []*auction.Digest {
	now := v.wall()
	v.mu.Lock()
	if r, ok := v.by[s]; ok && now.Sub(r.at) < shardViewFor && !now.Before(r.at) {
		v.mu.Unlock()
		return r.digests
	}
	v.mu.Unlock()
	ds := read(s)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.by == nil {
		v.by = map[auction.Shard]shardReading{}
	}
	v.by[s] = shardReading{at: now, digests: ds}
	return ds
}
