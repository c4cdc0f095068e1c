package trust

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/p2p"
)

// ErrNotFound is returned for a provider with no valid capacity record.
var ErrNotFound = errors.New("no valid capacity record")

// fetchParallelism bounds concurrent DHT lookups of capacity records.
const fetchParallelism = 16

// market is a node's view of the market: providers found through the
// DHT's provider key, their signed capacity records fetched, verified and
// cached until they expire.
type market struct {
	cfg Config
	p2p *p2p.Node
	log *slog.Logger
	now func() time.Time

	// fromDigests is the digest book's view; while it is empty the market
	// is walked in the DHT instead.
	fromDigests func() ([]query.Offer, bool)

	mu    sync.Mutex
	cache map[peer.ID]cachedRecord
}

type cachedRecord struct {
	rec     *auction.Capacity
	fetched time.Time
}

func newMarket(t *Trust) *market {
	return &market{
		cfg:   t.cfg,
		p2p:   t.p2p,
		log:   t.log.With("component", "market"),
		now:   t.now,
		cache: map[peer.ID]cachedRecord{},
	}
}

// providers lists every peer that announces the provider capability key.
func (m *market) providers(ctx context.Context) ([]peer.ID, error) {
	if err := m.p2p.WaitReady(ctx); err != nil {
		return nil, err
	}
	key := auction.CapabilityCID(auction.CapabilityProvider)
	seen := map[peer.ID]bool{}
	var out []peer.ID
	for ai := range m.p2p.DHT().FindProvidersAsync(ctx, key, 0) {
		if !seen[ai.ID] {
			seen[ai.ID] = true
			out = append(out, ai.ID)
		}
	}
	if len(out) == 0 && ctx.Err() != nil {
		return nil, fmt.Errorf("find providers: %w", ctx.Err())
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// record returns p's capacity record: from the cache while it is fresh,
// else from the DHT (the DHT's validator has checked signature, owner and
// expiry; the record is opened again here because the cache outlives it).
func (m *market) record(ctx context.Context, p peer.ID) (*auction.Capacity, error) {
	now := m.now()
	m.mu.Lock()
	c, ok := m.cache[p]
	m.mu.Unlock()
	if ok && !c.rec.Expired(now) && now.Sub(c.fetched) < m.cfg.Refresh {
		return c.rec, nil
	}
	raw, err := m.p2p.DHT().GetValue(ctx, auction.CapacityKey(p))
	if err != nil {
		if ok && !c.rec.Expired(now) {
			// A transient lookup failure should not hide a valid offer.
			m.log.Debug("refresh failed; serving cached record", "peer", p, "err", err)
			return c.rec, nil
		}
		return nil, fmt.Errorf("%w for %s: %v", ErrNotFound, p, err)
	}
	rec, signer, err := auction.OpenCapacity(raw)
	if err != nil {
		return nil, fmt.Errorf("capacity record of %s: %w", p, err)
	}
	if signer != p || rec.Expired(now) {
		return nil, fmt.Errorf("%w for %s: signed by %s or expired", ErrNotFound, p, signer)
	}
	m.mu.Lock()
	if old, ok := m.cache[p]; !ok || old.rec.Seq <= rec.Seq {
		m.cache[p] = cachedRecord{rec: rec, fetched: now}
	} else {
		rec = old.rec
	}
	m.mu.Unlock()
	return rec, nil
}

// offers fetches the records of every provider found. Problems with
// single providers are returned alongside, never silently dropped.
func (m *market) offers(ctx context.Context) (offers []query.Offer, seen int, problems []string, err error) {
	if m.fromDigests != nil {
		if offers, ok := m.fromDigests(); ok {
			return offers, len(offers), nil, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.SearchTimeout)
	defer cancel()
	ids, err := m.providers(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	type result struct {
		rec *auction.Capacity
		err error
	}
	results := make([]result, len(ids))
	sem := make(chan struct{}, fetchParallelism)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rec, err := m.record(ctx, id)
			results[i] = result{rec, err}
		})
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			problems = append(problems, r.err.Error())
			continue
		}
		offers = append(offers, query.Offer{Capacity: r.rec, Reliability: m.cfg.ReliabilityPrior})
	}
	return offers, len(ids), problems, nil
}

// SearchResult is the outcome of a market search.
type SearchResult struct {
	Offers    []query.Offer
	Explain   []query.ClauseStat
	Providers int
	Problems  []string
}

// search runs a parsed query over the market.
func (m *market) search(ctx context.Context, q *query.Query, sortKey query.SortKey, limit int, explain bool) (SearchResult, error) {
	offers, seen, problems, err := m.offers(ctx)
	if err != nil {
		return SearchResult{}, err
	}
	res := SearchResult{Offers: query.Search(q, offers, sortKey, limit), Providers: seen, Problems: problems}
	if explain {
		res.Explain = query.Explain(q, offers)
	}
	return res, nil
}
