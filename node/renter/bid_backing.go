package renter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
)

// slowBidChecks is how long the bids' record checks may take before the
// job's history says which one held the award up. A held record takes
// microseconds, one the bidder serves milliseconds.
const slowBidChecks = 250 * time.Millisecond

// unbacked checks every bid against a current capacity record of its
// provider (auction.BidBacking) and returns, per provider whose record does
// not back its bid, the reason; the matcher rejects those bids as
// unbacked. It also returns the records found, by provider (replicas
// tell hosts apart by their fingerprints). The records are fetched concurrently, one per bidder (the
// window already bounds the bids). Without a record source (Deps.
// ProviderRecord nil) nothing is checked.
func (ar *awarder) unbacked(ctx context.Context, jobID string, bids []*auction.Bid) (map[string]string, map[string]*auction.Capacity) {
	if ar.record == nil || len(bids) == 0 {
		return nil, nil
	}
	now := ar.now()
	var mu sync.Mutex
	out := map[string]string{}
	records := map[string]*auction.Capacity{}
	var slowest time.Duration
	var slowestBy string
	var wg sync.WaitGroup
	for _, b := range bids {
		wg.Go(func() {
			var rec *auction.Capacity
			start := time.Now()
			if id, err := peer.Decode(b.Provider); err == nil {
				rec, _ = ar.record(ctx, id)
			}
			took := time.Since(start)
			mu.Lock()
			records[b.Provider] = rec
			if took > slowest {
				slowest, slowestBy = took, b.Provider
			}
			mu.Unlock()
			if why := auction.BidBacking(b, rec, now); why != "" {
				mu.Lock()
				out[b.Provider] = why
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if slowest > slowBidChecks {
		// The award waits for every check: say which one held it up.
		ar.jobs.event(jobID, "checks", "checking %s against their providers' capacity records took %s, longest for %s",
			words.Plural(len(bids), "bid"), slowest.Round(time.Millisecond), lease.Short(slowestBy))
	}
	if len(out) > 0 {
		var parts []string
		for p, why := range out {
			parts = append(parts, fmt.Sprintf("%s: %s", lease.Short(p), why))
		}
		slices.Sort(parts)
		ar.jobs.event(jobID, "unbacked", "%s not backed by the provider's capacity record, refused: %s",
			words.Plural(len(out), "bid"), strings.Join(parts, "; "))
	}
	return out, records
}
