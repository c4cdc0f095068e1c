package trust

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/store"
)

// Award summaries are the price index's evidence (prices.go). Every node
// of a shard stored every valid one for 7 days, and each reading of the
// index (a provider's scarcity cap every 10 s, a second-price reserve,
// `market prices`) read them all from the store. Any two keys can make
// one: a made-up renter's award and a made-up provider's acceptance of
// it. The summary book bounds the state and the work:
//
//   - it takes a gossiped summary only when this node checked a capacity
//     record of its provider (Trust.everBacked) or is a party to it: the
//     index weighs a summary by its provider's evidence, nothing without
//     a record, so the others would be kept and read for nothing;
//   - it keeps the newest maxSummariesPerProvider of each provider (the
//     index caps what one party counts for anyway, so the older awards
//     of the busiest provider only deepen its history) and
//     maxSummaries in all, the oldest going first;
//   - it holds them opened and without their envelopes, so a reading
//     reads no store and checks no signature.
//
// Summaries this node is a party to are kept outside those bounds for
// their 7 days. The book follows the store: a restarted node opens what
// is stored once, and enforces the bounds on it (not the record rule: the
// evidence is memory only, and was checked when each arrived).

const (
	// maxSummaries bounds the others' summaries held: about 300 bytes
	// each in memory.
	maxSummaries = 1 << 16
	// maxSummariesPerProvider bounds one provider's: a week of one award
	// every 10 minutes.
	maxSummariesPerProvider = 1 << 10
)

// Reasons a summary is not kept, for idlegrid_trust_summaries_dropped_total.
const (
	summaryDropUnbacked = "unbacked" // of a provider this node never checked a record of
	summaryDropProvider = "provider" // older than its provider's newest maxSummariesPerProvider
	summaryDropFull     = "full"     // the oldest when maxSummaries were held
)

// heldSummary is one summary as the index reads it: no envelopes, no
// bidders.
type heldSummary struct {
	id  string
	s   auction.AwardSummary
	own bool
	at  int // index in old; -1 when not there
}

func (h *heldSummary) slot() *int { return &h.at }

// summaryBook is the summaries the price index reads (see above).
type summaryBook struct {
	self             string
	max, perProvider int // maxSummaries, maxSummariesPerProvider (a test's smaller)
	dropped          func(reason string)

	mu         sync.Mutex
	loaded     bool
	byID       map[string]*heldSummary
	byProvider map[string][]*heldSummary // others', oldest first
	old        indexedHeap[*heldSummary] // others', oldest first
}

func newSummaryBook(self string, dropped func(string)) *summaryBook {
	return &summaryBook{self: self, max: maxSummaries, perProvider: maxSummariesPerProvider, dropped: dropped,
		byID: map[string]*heldSummary{}, byProvider: map[string][]*heldSummary{},
		old: indexedHeap[*heldSummary]{less: func(a, b *heldSummary) bool { return olderFirst(a, b) < 0 }}}
}

// compact is what the index reads of a summary.
func compact(s *auction.AwardSummary) auction.AwardSummary {
	return auction.AwardSummary{V: s.V, Renter: s.Renter, Provider: s.Provider, Award: s.Award, RFQ: s.RFQ,
		Model: s.Model, Tier: s.Tier, GPUs: s.GPUs, PriceMicro: s.PriceMicro, AtMs: s.AtMs}
}

// olderFirst orders summaries by time, then ID: a total order.
func olderFirst(a, b *heldSummary) int {
	return cmp.Or(cmp.Compare(a.s.AtMs, b.s.AtMs), cmp.Compare(a.id, b.id))
}

// admit takes a verified summary stored (or about to be) under id. keep
// says whether the book holds it; drop lists the summaries to delete from
// the store: ones it pushed out, and id itself when not kept.
func (b *summaryBook) admit(id string, s *auction.AwardSummary) (keep bool, drop []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byID[id]; ok {
		return true, nil
	}
	h := &heldSummary{id: id, s: compact(s), own: s.Renter == b.self || s.Provider == b.self, at: -1}
	b.byID[id] = h
	if h.own {
		return true, nil
	}
	mine := b.byProvider[s.Provider]
	i, _ := slices.BinarySearchFunc(mine, h, olderFirst)
	b.byProvider[s.Provider] = slices.Insert(mine, i, h)
	heap.Push(&b.old, h)
	if mine := b.byProvider[s.Provider]; len(mine) > b.perProvider {
		b.dropped(summaryDropProvider)
		drop = append(drop, b.removeLocked(mine[0]))
	}
	for b.old.Len() > b.max {
		b.dropped(summaryDropFull)
		drop = append(drop, b.removeLocked(b.old.items[0]))
	}
	_, keep = b.byID[id]
	return keep, drop
}

// removeLocked forgets h and returns its ID.
func (b *summaryBook) removeLocked(h *heldSummary) string {
	delete(b.byID, h.id)
	if h.own {
		return h.id
	}
	if h.at >= 0 {
		heap.Remove(&b.old, h.at)
	}
	removeFrom(b.byProvider, h.s.Provider, h)
	return h.id
}

// load takes what the store holds, once: every summary the book lacks is
// opened (its signatures checked: the store is not a trust boundary) and
// admitted under the bounds; those the bounds push out are deleted.
func (b *summaryBook) load(db *store.DB) error {
	b.mu.Lock()
	loaded := b.loaded
	b.mu.Unlock()
	if loaded {
		return nil
	}
	ids, err := db.SummaryIDs()
	if err != nil {
		return err
	}
	var drop []string
	for _, id := range ids {
		b.mu.Lock()
		_, held := b.byID[id]
		b.mu.Unlock()
		if held {
			continue
		}
		raw, err := db.Summary(id)
		if err != nil {
			continue // gone meanwhile
		}
		s, _, err := auction.OpenAwardSummary(raw)
		if err != nil {
			continue // not a summary this release reads: left where it is
		}
		_, d := b.admit(id, s)
		drop = append(drop, d...)
	}
	b.mu.Lock()
	b.loaded = true
	b.mu.Unlock()
	if len(drop) > 0 {
		return db.DeleteSummaries(drop)
	}
	return nil
}

// current returns the summaries held whose retention has not run out at
// now, and forgets the others (the store's TTL drops them there).
func (b *summaryBook) current(now time.Time) []*heldSummary {
	b.mu.Lock()
	defer b.mu.Unlock()
	cut := now.Add(-summaryRetention).UnixMilli()
	for b.old.Len() > 0 && b.old.items[0].s.AtMs <= cut {
		b.removeLocked(b.old.items[0])
	}
	out := make([]*heldSummary, 0, len(b.byID))
	for _, h := range b.byID {
		if h.own && h.s.AtMs <= cut {
			b.removeLocked(h)
			continue
		}
		out = append(out, h)
	}
	return out
}
