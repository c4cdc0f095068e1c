package trust

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/store"
)

// Gossiped receipts are evidence from strangers, and keys are free: any
// two identities can sign receipts to each other as fast as gossip carries
// them. Every node kept each one for 30 days and read, hashed and parsed
// every one at each reputation fold and renown rebuild (about 9 µs a
// receipt and lease: BenchmarkReputationFold). The receipt book bounds
// both the state and the work:
//
//   - per (provider, renter) it keeps the GossipKeep heaviest receipts
//     (reputation.Config.GossipKeep, 16 with the defaults): the fold
//     diminishes one renter's receipts about a provider by half each, so
//     the rest could never move a score by more than 2^-15 of the pair's
//     weight, and a pair's heaviest stay its heaviest as they age;
//   - per provider it keeps maxReceiptsPerProvider, the lightest going
//     first: renter keys are free, so without it one checked provider
//     and fresh renters could fill the whole book with their receipts
//     and push every honest one out; now that takes 32 checked providers;
//   - in all it keeps maxGossipedReceipts, past which the lightest go
//     first (the oldest and smallest: the least evidence);
//   - it keeps each receipt parsed, so a fold reads the store's keys and
//     only the receipts it lacks.
//
// Before any of that, the gossip validator takes receipts only of
// providers this node checked a capacity record of (Trust.everBacked,
// the rule renown follows): a flood of receipts then needs providers
// that got through digest admission, not fresh keys alone.
//
// Receipts this node issued or was issued (own) are stored for good by
// the provider and renter rooms; the book takes them from the store and
// never drops them.

// maxGossipedReceipts bounds the other renters' receipts a node keeps:
// about 400 bytes each in memory (a fold over them all: see
// BenchmarkReputationFold).
const maxGossipedReceipts = 1 << 16

// maxReceiptsPerProvider bounds one provider's gossiped receipts kept: 68
// a day over the 30 days a receipt is kept. A provider with more (many
// renters, short leases) is scored on its heaviest: its newest and
// largest leases.
const maxReceiptsPerProvider = 1 << 11

// receiptBook is the receipts reputation and renown read (see above).
type receiptBook struct {
	cfg  reputation.Config
	self string
	keep int // cfg.GossipKeep()
	// max and perProvider are maxGossipedReceipts and
	// maxReceiptsPerProvider (a test's smaller).
	max, perProvider int
	// dropped counts receipts not kept, by reason (receiptDrop*).
	dropped func(reason string)

	mu   sync.Mutex
	byID map[string]*heldReceipt
	// unread are stored receipts that do not open (another release's):
	// not read again while they stay stored.
	unread    map[string]struct{}
	pairs     map[receiptPair][]*heldReceipt // gossiped, heaviest first
	providers map[string][]*heldReceipt      // gossiped, heaviest first
	light     indexedHeap[*heldReceipt]      // gossiped, lightest first
}

// Reasons a receipt is not kept, for idlegrid_trust_receipts_dropped_total.
const (
	receiptDropPair = "pair" // lighter than its pair's GossipKeep heaviest
	// lighter than its provider's maxReceiptsPerProvider heaviest
	receiptDropProvider = "provider"
	receiptDropFull     = "full"  // lightest when the book was full
	receiptDropSelf     = "self"  // a provider's receipt to itself: never counts
	receiptDropLease    = "lease" // a second receipt for a lease: the fold counts one
	// a receipt of a provider this node never checked a record of
	// (withheld by the validator, Trust.everBacked)
	receiptDropUnbacked = "unbacked"
)

type receiptPair struct{ provider, renter string }

type heldReceipt struct {
	id  string
	rc  reputation.Receipt
	own bool
	at  int // index in light; -1 when not there
}

func (h *heldReceipt) slot() *int { return &h.at }

func newReceiptBook(cfg reputation.Config, self string, dropped func(string)) *receiptBook {
	return &receiptBook{cfg: cfg, self: self, keep: cfg.GossipKeep(), max: maxGossipedReceipts,
		perProvider: maxReceiptsPerProvider, dropped: dropped,
		byID: map[string]*heldReceipt{}, unread: map[string]struct{}{}, pairs: map[receiptPair][]*heldReceipt{},
		providers: map[string][]*heldReceipt{},
		light:     indexedHeap[*heldReceipt]{less: func(a, b *heldReceipt) bool { return heavierFirst(cfg, a.rc, b.rc) > 0 }}}
}

// receiptEvidenceOf is a verified receipt as reputation evidence.
func receiptEvidenceOf(rc *attest.Receipt, v *attest.Voucher) reputation.Receipt {
	return reputation.Receipt{
		Lease: rc.Lease, Provider: rc.Provider, Renter: v.Renter, At: time.UnixMilli(rc.AtMs),
		State:    outcomeState(&store.Lease{State: rc.Outcome}),
		GPUHours: float64(rc.GPUMs) / float64(time.Hour/time.Millisecond),
	}
}

// refusal says why admit would not keep rc now (a receiptDrop reason),
// or "" when it would: the gossip validator passes on only receipts some
// node keeps.
func (b *receiptBook) refusal(id string, rc reputation.Receipt) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byID[id]; ok || b.isOwn(rc) {
		return ""
	}
	if rc.Provider == rc.Renter {
		return receiptDropSelf
	}
	pair := b.pairs[receiptPair{rc.Provider, rc.Renter}]
	for _, h := range pair {
		if h.rc.Lease == rc.Lease {
			if firstOfLease(rc, h.rc) {
				return ""
			}
			return receiptDropLease
		}
	}
	if len(pair) >= b.keep && heavierFirst(b.cfg, rc, pair[len(pair)-1].rc) >= 0 {
		return receiptDropPair
	}
	if mine := b.providers[rc.Provider]; len(mine) >= b.perProvider && heavierFirst(b.cfg, rc, mine[len(mine)-1].rc) >= 0 {
		return receiptDropProvider
	}
	if b.light.Len() >= b.max && heavierFirst(b.cfg, rc, b.light.items[0].rc) >= 0 {
		return receiptDropFull
	}
	return ""
}

func (b *receiptBook) isOwn(rc reputation.Receipt) bool {
	return rc.Provider == b.self || rc.Renter == b.self
}

// firstOfLease reports whether a comes before b, two receipts of one
// lease: the fold counts the first in its canonical order (renter, time,
// state, GPU-hours), so the book keeps that one.
func firstOfLease(a, b reputation.Receipt) bool {
	switch {
	case a.Renter != b.Renter:
		return a.Renter < b.Renter
	case !a.At.Equal(b.At):
		return a.At.Before(b.At)
	case a.State != b.State:
		return a.State < b.State
	}
	return a.GPUHours < b.GPUHours
}

// admit takes a verified receipt stored (or about to be) under id. keep
// says whether the book holds it; drop lists the receipts to delete from
// the store: ones it pushed out, and id itself when not kept.
func (b *receiptBook) admit(id string, rc reputation.Receipt) (keep bool, drop []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byID[id]; ok {
		return true, nil
	}
	if b.isOwn(rc) {
		b.byID[id] = &heldReceipt{id: id, rc: rc, own: true, at: -1}
		return true, nil
	}
	if rc.Provider == rc.Renter {
		b.dropped(receiptDropSelf)
		return false, []string{id}
	}
	key := receiptPair{rc.Provider, rc.Renter}
	h := &heldReceipt{id: id, rc: rc, at: -1}
	for _, old := range b.pairs[key] {
		if old.rc.Lease != rc.Lease {
			continue
		}
		b.dropped(receiptDropLease)
		if !firstOfLease(rc, old.rc) {
			return false, []string{id}
		}
		b.removeLocked(old)
		drop = append(drop, old.id)
		break
	}
	b.pairs[key] = b.insertLocked(b.pairs[key], h)
	b.providers[rc.Provider] = b.insertLocked(b.providers[rc.Provider], h)
	b.byID[id] = h
	heap.Push(&b.light, h)
	if pair := b.pairs[key]; len(pair) > b.keep {
		last := pair[len(pair)-1]
		b.dropped(receiptDropPair)
		b.removeLocked(last)
		drop = append(drop, last.id)
	}
	if mine := b.providers[rc.Provider]; len(mine) > b.perProvider {
		last := mine[len(mine)-1]
		b.dropped(receiptDropProvider)
		b.removeLocked(last)
		drop = append(drop, last.id)
	}
	for b.light.Len() > b.max {
		lightest := b.light.items[0]
		b.dropped(receiptDropFull)
		b.removeLocked(lightest)
		drop = append(drop, lightest.id)
	}
	_, keep = b.byID[id]
	return keep, drop
}

// insertLocked puts h in its place in xs, heaviest first.
func (b *receiptBook) insertLocked(xs []*heldReceipt, h *heldReceipt) []*heldReceipt {
	i, _ := slices.BinarySearchFunc(xs, h, func(x, y *heldReceipt) int { return heavierFirst(b.cfg, x.rc, y.rc) })
	return slices.Insert(xs, i, h)
}

// removeLocked forgets h.
func (b *receiptBook) removeLocked(h *heldReceipt) {
	delete(b.byID, h.id)
	if h.own {
		return
	}
	if h.at >= 0 {
		heap.Remove(&b.light, h.at)
	}
	removeFrom(b.pairs, receiptPair{h.rc.Provider, h.rc.Renter}, h)
	removeFrom(b.providers, h.rc.Provider, h)
}

// removeFrom takes h out of m[key], and key out of m when that empties.
func removeFrom[K, V comparable](m map[K][]V, key K, h V) {
	if xs := slices.DeleteFunc(m[key], func(x V) bool { return x == h }); len(xs) > 0 {
		m[key] = xs
	} else {
		delete(m, key)
	}
}

// sync makes the book what the store holds: it forgets receipts gone from
// the store (a gossiped one's 30 days ran out) and takes the ones it lacks
// (own ones the rooms stored, and everything after a restart), reading
// only their keys for the rest. It returns the receipts it holds, and
// deletes from the store those it does not keep.
func (b *receiptBook) sync(db *store.DB) []reputation.Receipt {
	ids, err := db.ReceiptIDs()
	if err != nil {
		return b.all()
	}
	stored := make(map[string]struct{}, len(ids))
	var lack []string
	b.mu.Lock()
	for _, id := range ids {
		stored[id] = struct{}{}
		_, held := b.byID[id]
		if _, bad := b.unread[id]; !held && !bad {
			lack = append(lack, id)
		}
	}
	for id, h := range b.byID {
		if _, ok := stored[id]; !ok {
			b.removeLocked(h)
		}
	}
	for id := range b.unread {
		if _, ok := stored[id]; !ok {
			delete(b.unread, id)
		}
	}
	b.mu.Unlock()
	var drop []string
	for _, id := range lack {
		raw, err := db.Receipt(id)
		if err != nil {
			continue
		}
		rc, v, err := attest.OpenReceipt(raw)
		if err != nil {
			b.mu.Lock()
			b.unread[id] = struct{}{} // not evidence; left where it is
			b.mu.Unlock()
			continue
		}
		_, d := b.admit(id, receiptEvidenceOf(rc, v))
		drop = append(drop, d...)
	}
	if len(drop) > 0 {
		_ = db.DeleteReceipts(drop) // what is left is dropped again at the next sync
	}
	return b.all()
}

// all returns every receipt held.
func (b *receiptBook) all() []reputation.Receipt {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]reputation.Receipt, 0, len(b.byID))
	for _, h := range b.byID {
		out = append(out, h.rc)
	}
	return out
}

// ownProviders are the providers of the receipts this node issued or was
// issued: the ones it dealt with itself.
func (b *receiptBook) ownProviders() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	for _, h := range b.byID {
		if h.own {
			out[h.rc.Provider] = true
		}
	}
	return out
}

// gossiped is how many other renters' receipts the book holds.
func (b *receiptBook) gossiped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.light.Len()
}

// heavierFirst is the fold's order of one pair's receipts
// (reputation.Config.HeavierFirst), made total over pairs: equal weights
// of different pairs by provider, then renter. The book holds one receipt
// per pair and lease, so no two held receipts compare equal.
func heavierFirst(cfg reputation.Config, a, b reputation.Receipt) int {
	return cmp.Or(cfg.HeavierFirst(a, b), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Renter, b.Renter))
}
