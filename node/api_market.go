package node

import (
	"context"
	"errors"
	"net/http"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/trust"
	"github.com/idlegrid/idlegrid/p2p"
)

func (b apiBackend) Search(ctx context.Context, q, sortBy string, limit int, explain bool) (api.SearchResult, error) {
	res, err := b.n.trust.Search(ctx, q, sortBy, limit, explain)
	if err != nil {
		var qe *query.Error
		if errors.As(err, &qe) {
			// The user typed the query, not a file: a column, no Go names.
			if qe.Pos < 0 {
				return api.SearchResult{}, api.Errorf(http.StatusBadRequest, api.CodeBadQuery, "%s", qe.Msg)
			}
			return api.SearchResult{}, api.Errorf(http.StatusBadRequest, api.CodeBadQuery, "query %q, at column %d: %s", q, qe.Pos+1, qe.Msg)
		}
		if errors.Is(err, p2p.ErrNotRoutable) {
			return api.SearchResult{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "%s", b.noPeersHint())
		}
		return api.SearchResult{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "market search: %v", err)
	}
	out := api.SearchResult{Query: q, Sort: sortBy, Providers: res.Providers, Problems: res.Problems, Offers: []api.Offer{}}
	for _, o := range res.Offers {
		out.Offers = append(out.Offers, api.OfferFromCapacity(o.Capacity, o.Reliability, false))
	}
	for _, cs := range res.Explain {
		out.Explain = append(out.Explain, api.ClauseStat{Clause: cs.Clause, Removed: cs.Removed, Remaining: cs.Remaining})
	}
	return out, nil
}

func (b apiBackend) Provider(ctx context.Context, id string) (api.Offer, error) {
	p, err := peer.Decode(id)
	if err != nil {
		return api.Offer{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "%q is not a peer ID (peer IDs look like 12D3KooW…; idlegrid rep lists them)", id)
	}
	rec, err := b.n.trust.ProviderRecord(ctx, p)
	if err != nil {
		if errors.Is(err, trust.ErrNotFound) {
			return api.Offer{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "%v", err)
		}
		return api.Offer{}, api.Errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "%v", err)
	}
	return api.OfferFromCapacity(rec, b.n.cfg.Market.ReliabilityPrior, true), nil
}
