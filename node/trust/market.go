package trust

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/p2p"
)

// ErrNotFound is returned for a provider with no valid capacity record.
var ErrNotFound = errors.New("no valid capacity record")

// errNoRoutes is returned for a lookup this node cannot run yet: its
// routing table is empty (it has just started, or lost every DHT peer), so
// the DHT answers "not found" for every key without asking anyone. That is
// no evidence about the provider, nor about the peer that passed its
// digest on.
var errNoRoutes = errors.New("no DHT peers to look records up with yet")

// ErrIncomplete is returned with the offers found when the search
// deadline came before the DHT lookups finished: more providers may exist.
var ErrIncomplete = errors.New("market view incomplete: the DHT lookups ran out of time")

// fetchParallelism bounds concurrent DHT lookups of capacity records.
const fetchParallelism = 16

// recordQuorum is how many copies of a capacity record a lookup gathers
// before it settles on the newest of them. Without one it waits for all
// 20 closest peers: a search then costs a full lookup per provider, and on
// a busy machine the providers' own lookup ran out of time before it
// found them all. A provider puts each record to all of those peers and
// waits for them, so a handful of answers holds the newest record unless
// puts failed, and the cache never goes back to an older one.
const recordQuorum = 4

// market is a node's view of the market: providers found through the
// DHT's provider key, their signed capacity records fetched, verified and
// cached until they expire.
type market struct {
	cfg Config
	p2p *p2p.Node
	log *slog.Logger
	now func() time.Time

	// fromDigests is the digest book's view of backed providers, and how
	// many digests it holds unchecked; while no provider is backed the
	// market is walked in the DHT instead.
	fromDigests func() ([]query.Offer, int, bool)

	mu    sync.Mutex
	cache map[peer.ID]cachedRecord
}

// cachedRecord is a verified record and its sealed bytes, which this
// node serves to peers checking the provider's digest (records_serve.go).
type cachedRecord struct {
	rec     *auction.Capacity
	raw     []byte
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
	rec, err := m.lookup(ctx, p)
	if err != nil && ok && !c.rec.Expired(now) {
		// A transient lookup failure should not hide a valid offer.
		m.log.Debug("refresh failed; serving cached record", "peer", p, "err", err)
		return c.rec, nil
	}
	return rec, err
}

// lookup fetches p's record from the DHT, never from the cache (a record
// check needs the record as it is now), and caches it.
func (m *market) lookup(ctx context.Context, p peer.ID) (*auction.Capacity, error) {
	now := m.now()
	if m.p2p.DHT().RoutingTable().Size() == 0 {
		return nil, fmt.Errorf("capacity record of %s: %w", p, errNoRoutes)
	}
	raw, err := m.fetch(ctx, auction.CapacityKey(p))
	if err != nil {
		return nil, fmt.Errorf("%w for %s: %v", ErrNotFound, p, err)
	}
	rec, signer, err := auction.OpenCapacity(raw)
	if err != nil {
		return nil, fmt.Errorf("capacity record of %s: %w", p, err)
	}
	if signer != p || rec.Expired(now) {
		return nil, fmt.Errorf("%w for %s: signed by %s or expired", ErrNotFound, p, signer)
	}
	return m.keep(p, rec, raw, now), nil
}

// maxCachedRecords bounds the cache: records are kept for providers whose
// digests this node checked, and the digest book holds at most
// auction.MaxBookDigests of those.
const maxCachedRecords = auction.MaxBookDigests

// keep caches a verified record of p unless a newer one is cached, and
// returns the newer of the two. Over maxCachedRecords the expired ones go
// first; a new provider's record is not cached while it is still full.
func (m *market) keep(p peer.ID, rec *auction.Capacity, raw []byte, now time.Time) *auction.Capacity {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.cache[p]
	if ok && old.rec.Seq > rec.Seq {
		return old.rec
	}
	if !ok && len(m.cache) >= maxCachedRecords {
		m.pruneLocked(now)
		if len(m.cache) >= maxCachedRecords {
			return rec
		}
	}
	m.cache[p] = cachedRecord{rec: rec, raw: raw, fetched: now}
	return rec
}

// cached returns p's cached record and its bytes, and when it was
// fetched; ok is false when none is cached or it expired.
func (m *market) cached(p peer.ID, now time.Time) (c cachedRecord, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok = m.cache[p]
	return c, ok && !c.rec.Expired(now)
}

// prune drops expired records.
func (m *market) prune(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked(now)
}

func (m *market) pruneLocked(now time.Time) {
	for p, c := range m.cache {
		if c.rec.Expired(now) {
			delete(m.cache, p)
		}
	}
}

// fetch returns the best record the DHT yields for key before ctx ends.
// GetValue waits for every one of the closest peers to answer and, when
// one of them is slow and the search deadline comes first, returns the
// record it already received together with the deadline error; taking
// that as "not found" made a whole search come back empty on a loaded
// network. A search shows the newest record it saw.
func (m *market) fetch(ctx context.Context, key string) ([]byte, error) {
	vals, err := m.p2p.DHT().SearchValue(ctx, key, dht.Quorum(recordQuorum))
	if err != nil {
		return nil, err
	}
	var best []byte
	for v := range vals {
		best = v // SearchValue sends only values better than the last
	}
	if best == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, routing.ErrNotFound
	}
	return best, nil
}

// offers fetches the records of every provider found. Problems with
// single providers are returned alongside, never silently dropped;
// complete is false when the deadline cut the lookups short.
//
// Providers come from the DHT's provider key, whose lookup (like a record
// lookup) runs until every close peer answered or the search deadline:
// each record is fetched as soon as its provider is found, not after the
// lookup ends, so one slow peer cannot leave the fetches no time at all.
func (m *market) offers(ctx context.Context) (offers []query.Offer, seen int, problems []string, complete bool, err error) {
	if m.fromDigests != nil {
		if offers, held, ok := m.fromDigests(); ok {
			if held > 0 {
				problems = append(problems, fmt.Sprintf("%d providers not shown yet: their capacity records are being checked", held))
			}
			return offers, len(offers), problems, true, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.SearchTimeout)
	defer cancel()
	if err := m.p2p.WaitReady(ctx); err != nil {
		return nil, 0, nil, false, err
	}
	type result struct {
		id  peer.ID
		rec *auction.Capacity
		err error
	}
	var results []*result
	found := map[peer.ID]bool{}
	sem := make(chan struct{}, fetchParallelism)
	var wg sync.WaitGroup
	key := auction.CapabilityCID(auction.CapabilityProvider)
	for ai := range m.p2p.DHT().FindProvidersAsync(ctx, key, 0) {
		if found[ai.ID] {
			continue
		}
		found[ai.ID] = true
		r := &result{id: ai.ID}
		results = append(results, r)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r.rec, r.err = m.record(ctx, r.id)
		})
	}
	wg.Wait()
	complete = ctx.Err() == nil
	if len(results) == 0 && !complete {
		return nil, 0, nil, false, fmt.Errorf("find providers: %w", ctx.Err())
	}
	sort.Slice(results, func(i, j int) bool { return results[i].id < results[j].id })
	for _, r := range results {
		if r.err != nil {
			problems = append(problems, r.err.Error())
			continue
		}
		offers = append(offers, query.Offer{Capacity: r.rec, Reliability: m.cfg.ReliabilityPrior})
	}
	return offers, len(results), problems, complete, nil
}

// MaxSearchOffers bounds the offers one search returns, whatever its
// limit: an offer lists every GPU, and an unbounded answer over a large
// market outgrew what the API client reads (16 MiB), which the client
// reported as a truncated response ("unexpected EOF").
const MaxSearchOffers = 1000

// SearchResult is the outcome of a market search.
type SearchResult struct {
	Offers    []query.Offer
	Explain   []query.ClauseStat
	Providers int
	Problems  []string
}

// search runs a parsed query over the market.
func (m *market) search(ctx context.Context, q *query.Query, sortKey query.SortKey, limit int, explain bool) (SearchResult, error) {
	offers, seen, problems, complete, err := m.offers(ctx)
	if err != nil {
		return SearchResult{}, err
	}
	if !complete {
		problems = append(problems, ErrIncomplete.Error())
	}
	matched := query.Search(q, offers, sortKey, 0)
	if limit <= 0 || limit > MaxSearchOffers {
		if len(matched) > MaxSearchOffers {
			problems = append(problems, fmt.Sprintf("showing the first %d of %d matching providers: narrow the query or pass a limit", MaxSearchOffers, len(matched)))
		}
		limit = MaxSearchOffers
	}
	res := SearchResult{Offers: matched[:min(len(matched), limit)], Providers: seen, Problems: problems}
	if explain {
		res.Explain = query.Explain(q, offers)
	}
	return res, nil
}
