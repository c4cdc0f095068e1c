package renter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
)

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
	var wg sync.WaitGroup
	for _, b := range bids {
		wg.Go(func() {
			var rec *auction.Capacity
			if id, err := peer.Decode(b.Provider); err == nil {
				rec, _ = ar.record(ctx, id)
			}
			mu.Lock()
			records[b.Provider] = rec
			mu.Unlock()
			if why := auction.BidBacking(b, rec, now); why != "" {
				mu.Lock()
				out[b.Provider] = why
				mu.Unlock()
			}
		})
	}
	wg.Wait()
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
