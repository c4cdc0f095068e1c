package trust

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
)

// BidRecord is the capacity record a renter checks a bid against
// (auction.BidBacking), found without a DHT lookup where it can be:
//
//  1. the newest current record this node holds, however it came (digest
//     sync, record asks, lookups): BidBacking reads what a record says
//     about the host (its GPUs and their model, its region, its hardware
//     fingerprint), not what is free, and the provider signed any current
//     record of its own as much as the one in the DHT;
//  2. else the record the bidder serves of itself (RecordsProto): it has
//     just sent its bid, so it is connected;
//  3. else a DHT lookup.
//
// A DHT lookup for each bidder whose cached record was older than
// market.refresh put seconds into the award's path: in 200-node runs the
// award round trip was 61-89 ms at the median and 0.6-1 s at p95, up to
// 4.3 s, and 10 ms and 85 ms with the records held (docs/benchmarks.md).
func (t *Trust) BidRecord(ctx context.Context, id peer.ID) (*auction.Capacity, error) {
	if c, ok := t.market.cached(id, t.now()); ok {
		return c.rec, nil
	}
	actx, cancel := context.WithTimeout(ctx, recordsAskTimeout)
	got, err := t.askRecords(actx, id, []peer.ID{id})
	cancel()
	if rec := got[id]; err == nil && rec != nil {
		return rec, nil
	}
	lctx, lcancel := context.WithTimeout(ctx, t.cfg.SearchTimeout)
	defer lcancel()
	rec, err := t.fetchRecord(lctx, id)
	if err != nil {
		return nil, fmt.Errorf("bid record: %w", err)
	}
	return rec, nil
}
