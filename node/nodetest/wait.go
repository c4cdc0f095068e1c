package nodetest

import (
	"context"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/node"
)

// WaitFor polls cond until it holds or ctx ends.
func WaitFor(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// diagnoseTimeout bounds the one search a failed wait runs to describe
// the market, on a fresh context: the wait's own has ended by then, and a
// search on it would report no offers whatever the cluster holds.
const diagnoseTimeout = 30 * time.Second

// WaitSearchable waits until renter's market search (the empty query)
// finds want offers from its digest book, every provider's record checked
// and no digest waiting for its check (a search shows the providers backed
// so far once one is: issue 23). On failure
// the error says what the last search in the wait saw and what one more
// search, on a fresh context, sees now.
func WaitSearchable(ctx context.Context, renter *node.Node, want int) error {
	var last string
	err := WaitFor(ctx, fmt.Sprintf("%d providers' records to be searchable", want), func() bool {
		res, err := renter.Trust().Search(ctx, "", "", 0, false)
		if err != nil {
			last = fmt.Sprintf("search failed: %v", err)
			return false
		}
		view := renter.Trust().MarketView()
		last = fmt.Sprintf("%d offers of %d providers found, problems %v, market view %+v", len(res.Offers), res.Providers, res.Problems, view)
		return len(res.Offers) == want && view.Held == 0 && view.Backed >= want
	})
	if err == nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.Background(), diagnoseTimeout)
	defer cancel()
	var now string
	if res, serr := renter.Trust().Search(dctx, "", "", 0, false); serr != nil {
		now = fmt.Sprintf("search failed: %v", serr)
	} else {
		now = fmt.Sprintf("%d offers of %d providers found, problems %v", len(res.Offers), res.Providers, res.Problems)
	}
	return fmt.Errorf("%w; last search in the wait: %s; a fresh search now: %s", err, last, now)
}
