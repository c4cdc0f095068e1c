package trust

import (
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// Providers that never bid, seen from a provider. The cheapest proven
// providers of a shard fill the always-bid prefix of every provider's
// view (auction/bidselect.go), and "proven" is evidence strangers can
// make for each other: a made-up provider with a record and a made-up
// renter co-signing a summary. A renter learns from its own auctions
// that such a provider never bids (expect.go), but a provider holds no
// auctions, so it kept them in its view for good, and the cheapest
// honest providers, pushed out of the prefix, bid only by lot: the
// auction's price was no longer set as if everyone had bid.
//
// So a provider remembers the prefix its bid decision computed for each
// RFQ (NotePrefix), and the RFQ's award summary, signed by the RFQ's own
// renter, lists who bid: a prefix member not listed missed the auction,
// one listed answered it. Misses count in the same evidence as a
// renter's own (ProviderEvidence.Missed; silent after SilentAfter), but
// an answer seen in a summary takes one miss off rather than all of them
// (only a bid this node received clears them): a renter's list is its
// word, so keeping a made-up provider out of silence takes a made-up
// summary for every honest one that shows it missing, and an honest
// provider stays clear as long as it answers at least as often as it
// misses.

// maxPrefixes bounds the RFQs whose prefix is remembered; prefixFor is
// how long one waits for its summary (the bid window, the award round
// trip and the gossip of the summary, with room to spare).
const (
	maxPrefixes = 4096
	prefixFor   = 5 * time.Minute
)

type prefixWatch struct {
	mu    sync.Mutex
	by    map[string]notedPrefix // by RFQ record ID
	order []string               // RFQ IDs, oldest first
}

type notedPrefix struct {
	renter string
	peers  []string
	until  time.Time
}

func newPrefixWatch() *prefixWatch { return &prefixWatch{by: map[string]notedPrefix{}} }

// note remembers the prefix of rfqID, published by renter, until until.
func (w *prefixWatch) note(rfqID, renter string, peers []string, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.by[rfqID]; ok {
		return // the same RFQ on another of this node's shards: the first decision stands
	}
	for len(w.order) > 0 && (len(w.by) >= maxPrefixes || !until.Before(w.by[w.order[0]].until.Add(prefixFor))) {
		delete(w.by, w.order[0])
		w.order = w.order[1:]
	}
	w.by[rfqID] = notedPrefix{renter: renter, peers: peers, until: until}
	w.order = append(w.order, rfqID)
}

// take returns and forgets the prefix of rfqID if renter published it
// and it is still waited for at now.
func (w *prefixWatch) take(rfqID, renter string, now time.Time) ([]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.by[rfqID]
	if !ok || p.renter != renter {
		return nil, false
	}
	delete(w.by, rfqID)
	if i := slices.Index(w.order, rfqID); i >= 0 {
		w.order = slices.Delete(w.order, i, i+1)
	}
	return p.peers, now.Before(p.until)
}

// NotePrefix remembers the always-bid prefix this provider's bid
// decision computed for the RFQ rfqID of renter (BidSelection.Always),
// to compare with the RFQ's award summary.
func (t *Trust) NotePrefix(rfqID, renter string, always []string) {
	// The cheapest MaxSummaryBidders at most (Always is cheapest first):
	// an RFQ that asks everyone has the whole shard as its prefix, and a
	// summary lists no more bidders than that.
	always = always[:min(len(always), auction.MaxSummaryBidders)]
	peers := make([]string, 0, len(always))
	for _, p := range always {
		if p != t.selfStr && p != renter {
			peers = append(peers, p)
		}
	}
	if len(peers) == 0 {
		return
	}
	t.prefixes.note(rfqID, renter, peers, t.now().Add(prefixFor))
}

// watchPrefix compares a verified award summary with the prefix noted
// for its RFQ: a member the summary does not list as a bidder missed
// (unless the list is full, MaxSummaryBidders, and so may have left it
// out), one it lists answered.
func (t *Trust) watchPrefix(sum *auction.AwardSummary) {
	now := t.now()
	peers, ok := t.prefixes.take(sum.RFQ, sum.Renter, now)
	if !ok {
		return
	}
	complete := len(sum.Bidders) < auction.MaxSummaryBidders
	for _, p := range peers {
		_, listed := slices.BinarySearch(sum.Bidders, p) // sorted (auction.AwardSummary)
		switch {
		case !t.everBacked(p):
			// Only a provider this node checked is in its view; one that
			// left the book since gets no entry back.
		case listed:
			t.prefixAnswers.Inc()
			t.ev.update(p, now, func(ev *peerEvidence) { ev.Missed = max(ev.Missed-1, 0) })
		case complete:
			t.prefixMisses.Inc()
			t.ev.update(p, now, func(ev *peerEvidence) {
				ev.Missed++
				ev.LastMiss = now
			})
			if ev := t.ev.of(p); ev.Missed == auction.SilentAfter {
				t.prefixSilenced.Inc()
				t.log.Info("provider silent: in the always-bid prefix and missing from the award summaries", "provider", p, "auctions", auction.SilentAfter)
			}
		}
	}
}
