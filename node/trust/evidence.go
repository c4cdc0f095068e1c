package trust

import (
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// The evidence book is what this node checked about each provider whose
// digest it holds (auction/evidence.go has the levels and the rules): a
// digest counts only as far as this evidence goes. It is memory only; a
// restarted node checks the records again as digests arrive.

// maxEvidence bounds the providers with evidence kept: the book's maximum
// plus room for providers that left it (their summaries still count in
// the price index) and for held ones.
const maxEvidence = auction.MaxBookDigests + auction.MaxBookDigests/4

// unbackedFor is how long a provider whose record did not back its digest
// is not checked again: its digests are dropped meanwhile. A minute: an
// honest provider whose record a loaded node's lookups missed (40 nodes
// on 2 cores) was otherwise invisible to that node for 10 minutes, and a
// made-up provider costs its source a new budget token at each return.
const unbackedFor = time.Minute

// peerEvidence is one provider's entry.
type peerEvidence struct {
	auction.ProviderEvidence
	// capSeq is the seq of the record that matched, serves the shards it
	// serves; everBacked stays set when the record lapses (for the price
	// index).
	capSeq     uint64
	serves     []auction.Shard
	everBacked bool
	// checking: a record check is queued or running; checkedAt is when
	// the last one ended.
	checking  bool
	checkedAt time.Time
	tries     int
	// unbackedUntil: a check failed; digests are dropped until then.
	unbackedUntil time.Time
	// held is set while the provider's digest waits for its first check;
	// its sources are the budget keys it was taken from (given back when
	// it checks out), blame the peer charged when it does not.
	held    bool
	sources []string
	blame   peer.ID
	// via is the peer that passed on the provider's latest digest: a
	// re-check asks it for the record first (records_serve.go).
	via peer.ID
	// vouchers are the latest renters whose summaries listed the provider
	// among their bidders (at most maxVouchers); they count while the
	// renter is renowned.
	vouchers []string
	touched  time.Time
}

// maxVouchers bounds the renters remembered as vouching for a provider.
const maxVouchers = 4

type evidenceBook struct {
	mu    sync.Mutex
	by    map[string]*peerEvidence
	max   int
	nheld int // entries with held set
}

func newEvidenceBook() *evidenceBook {
	return &evidenceBook{by: map[string]*peerEvidence{}, max: maxEvidence}
}

// get returns p's entry, creating it; callers hold e.mu.
func (e *evidenceBook) get(p string, now time.Time) *peerEvidence {
	ev, ok := e.by[p]
	if !ok {
		if len(e.by) >= e.max {
			e.evictLocked()
		}
		ev = &peerEvidence{}
		e.by[p] = ev
	}
	ev.touched = now
	return ev
}

// evictLocked drops the least recently touched entry that is not held
// (one scan; eviction is rare: the map holds more than the book).
func (e *evidenceBook) evictLocked() {
	var oldest string
	var at time.Time
	for p, ev := range e.by {
		if !ev.held && !ev.checking && (oldest == "" || ev.touched.Before(at)) {
			oldest, at = p, ev.touched
		}
	}
	delete(e.by, oldest)
}

// of returns a copy of p's evidence (zero when none).
func (e *evidenceBook) of(p string) peerEvidence {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev, ok := e.by[p]; ok {
		return *ev
	}
	return peerEvidence{}
}

// update runs fn on p's entry under the lock.
func (e *evidenceBook) update(p string, now time.Time, fn func(ev *peerEvidence)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := e.get(p, now)
	was := ev.held
	fn(ev)
	switch {
	case ev.held && !was:
		e.nheld++
	case was && !ev.held:
		e.nheld--
	}
}

// heldCount counts the providers whose digests wait for their first check.
func (e *evidenceBook) heldCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nheld
}

// evidence is p's evidence as the rules take it: Vouched counts its
// vouchers renowned now, and with reach set, Reachable says whether it is
// connected now and serves the lease protocol.
func (t *Trust) evidence(p string, reach bool) auction.ProviderEvidence {
	pe := t.ev.of(p)
	ev := pe.ProviderEvidence
	for _, r := range pe.vouchers {
		if t.Renowned(r) {
			ev.Vouched++
		}
	}
	if !reach {
		return ev
	}
	if id, err := peer.Decode(p); err == nil {
		h := t.p2p.Host()
		if h.Network().Connectedness(id) == network.Connected {
			ok, err := h.Peerstore().SupportsProtocols(id, lease.LeaseProto)
			ev.Reachable = err == nil && len(ok) > 0
		}
	}
	return ev
}

// backed reports whether d's provider has a matched current record; a
// node's own digest is backed (it knows its record).
func (t *Trust) backed(d *auction.Digest, now time.Time) bool {
	return d.Peer == t.selfStr || t.ev.of(d.Peer).Backed(now)
}

// NoteBid records a bid this node received from provider for the RFQ
// rfqID: evidence that the provider answers, and an answer to the
// auction's expectation.
func (t *Trust) NoteBid(rfqID, provider string) {
	now := t.now()
	t.ev.update(provider, now, func(ev *peerEvidence) {
		ev.Bids++
		ev.Missed = 0
	})
	t.expect.answered(rfqID, provider)
}

// Summaries are evidence of bids only about providers this node checked
// a record of (noteWon, noteVouched): for the others they move nothing
// (proven needs backed), and an entry made for each would let a flood of
// summaries naming made-up bidders (64 each, any two keys can sign one)
// push honest providers' evidence out of the bounded book.

// noteWon records an award summary carrying provider's acceptance.
func (t *Trust) noteWon(provider string) {
	if !t.everBacked(provider) {
		return
	}
	t.ev.update(provider, t.now(), func(ev *peerEvidence) { ev.Won++ })
}

// noteVouched records that renter listed bidders in an award summary.
func (t *Trust) noteVouched(renter string, bidders []string) {
	now := t.now()
	for _, b := range bidders {
		if b == renter || b == t.selfStr || !t.everBacked(b) {
			continue
		}
		t.ev.update(b, now, func(ev *peerEvidence) {
			if slices.Contains(ev.vouchers, renter) {
				return
			}
			ev.vouchers = append(ev.vouchers, renter)
			if len(ev.vouchers) > maxVouchers {
				ev.vouchers = ev.vouchers[1:]
			}
		})
	}
}

// noteReceipt records a receipt provider issued to another renter.
func (t *Trust) noteReceipt(provider, renter string) {
	if provider == renter {
		return
	}
	t.ev.update(provider, t.now(), func(ev *peerEvidence) { ev.Receipts++ })
}

// settleExpectations charges a miss to every provider an auction expected
// that did not bid by its deadline.
func (t *Trust) settleExpectations() {
	now := t.now()
	for _, p := range t.expect.settle(now) {
		t.ev.update(p, now, func(ev *peerEvidence) {
			ev.Missed++
			ev.LastMiss = now
		})
		if t.ev.of(p).Silent(now) {
			t.log.Info("provider silent: expected to bid and did not", "provider", p, "auctions", auction.SilentAfter)
		}
	}
}

// ViewCounts says how far the digest book counts: providers backed by a
// checked record, of them those proven (seen to bid) and those silent
// (expected to bid and missing, out of the bid-selection view for now),
// and digests held while their records are checked.
type ViewCounts struct {
	Backed, Proven, Silent, Held int
}

// MarketView counts the digest book by evidence level.
func (t *Trust) MarketView() ViewCounts {
	now := t.now()
	var c ViewCounts
	for _, d := range t.digests.Digests("", now) {
		if d.Peer == t.selfStr {
			continue
		}
		ev := t.evidence(d.Peer, false)
		switch {
		case ev.Proven(now):
			c.Backed++
			c.Proven++
		case ev.Backed(now):
			c.Backed++
		default:
			c.Held++
		}
		if ev.Backed(now) && ev.Silent(now) {
			c.Silent++
		}
	}
	return c
}
