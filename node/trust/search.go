package trust

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
)

// Offers is the market view: the verified offers of every provider found.
// When the search deadline cut the DHT lookups short it returns the
// offers found with ErrIncomplete, so a caller that needs every provider
// (the renter closing a bid window once all expected bidders answered)
// does not take a part for the whole.
func (t *Trust) Offers(ctx context.Context) ([]query.Offer, error) {
	offers, _, _, complete, err := t.market.offers(ctx)
	if err == nil && !complete {
		err = ErrIncomplete
	}
	return offers, err
}

// Search parses a market query and runs it over the providers found in the
// DHT. A malformed query or sort key returns a *query.Error.
func (t *Trust) Search(ctx context.Context, q, sortBy string, limit int, explain bool) (SearchResult, error) {
	parsed, err := query.Parse(q)
	if err != nil {
		return SearchResult{}, err
	}
	key, err := query.ParseSort(sortBy)
	if err != nil {
		return SearchResult{}, err
	}
	return t.market.search(ctx, parsed, key, limit, explain)
}

// ProviderRecord fetches and verifies one provider's capacity record.
func (t *Trust) ProviderRecord(ctx context.Context, id peer.ID) (*auction.Capacity, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.SearchTimeout)
	defer cancel()
	if err := t.p2p.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("provider record: %w", err)
	}
	return t.market.record(ctx, id)
}
