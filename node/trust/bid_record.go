package trust

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
)

// bidRecordWait bounds how long one bid's record may hold up its award:
// the award waits for every bid's check, and a bidder nobody holds a
// record of (a fresh key, say) would otherwise hold every award it bids
// in for a whole market search (market.search_timeout, 15 s). An honest
// bidder answers its own ask in milliseconds.
const bidRecordWait = 2 * time.Second

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
//  3. else a DHT lookup, in what is left of bidRecordWait.
//
// A DHT lookup for each bidder whose cached record was older than
// market.refresh put seconds into the award's path: in 200-node runs the
// award round trip was 47-89 ms at the median and up to 4.3 s, and 5-9 ms
// at the median with the records held (docs/benchmarks.md).
func (t *Trust) BidRecord(ctx context.Context, id peer.ID) (*auction.Capacity, error) {
	if c, ok := t.market.cached(id, t.now()); ok {
		return c.rec, nil
	}
	ctx, cancel := context.WithTimeout(ctx, bidRecordWait)
	defer cancel()
	got, err := t.askRecords(ctx, id, []peer.ID{id})
	if rec := got[id]; err == nil && rec != nil {
		return rec, nil
	}
	rec, err := t.fetchRecord(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("bid record: %w", err)
	}
	return rec, nil
}
