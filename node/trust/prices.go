package trust

import (
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
)

// summaryRetention is how long award summaries are kept for the price
// index.
const summaryRetention = 7 * 24 * time.Hour

// The price index (`market prices`, and the cap of the providers'
// scarcity pricing) counts award summaries that carry their lease, both
// signatures (auction.OpenAwardSummary), each weighed by what this node
// knows of its parties: the provider's evidence (auction.ProviderEvidence
// Weight: nothing without a record that backed its digest), times 1 for a
// renowned renter and 1/2 for another. A summary this node is party to
// counts fully. auction.PriceStats then caps each party, so a minority of
// colluding pairs cannot drag the median out of what others paid.

// PriceIndex computes cleared prices per model and tier from the award
// summaries this node has received, over [since, until).
func (t *Trust) PriceIndex(since, until time.Time) ([]auction.PriceStat, error) {
	raws, err := t.db.Summaries()
	if err != nil {
		return nil, err
	}
	now := t.now()
	t.summariesMu.Lock()
	known := t.openedSummaries
	t.summariesMu.Unlock()
	opened := make(map[string]*auction.AwardSummary, len(raws))
	var entries []auction.PriceEntry
	for _, raw := range raws {
		// Stored summaries are opened (their signatures checked: the
		// store is not a trust boundary) the first time they are read
		// here, not at every reading: about 0.3 ms each, and a provider
		// reads the index every 10 s over 7 days of summaries
		// (BenchmarkPriceIndex: 2.8 s at 10,000 before).
		id := attest.RecordID(raw).String()
		s, ok := known[id]
		if !ok {
			s, _, err = auction.OpenAwardSummary(raw)
			if err != nil {
				s = nil // not a summary: skipped, and not opened again
			}
		}
		opened[id] = s
		if s != nil {
			entries = append(entries, auction.PriceEntry{Summary: *s, Weight: t.summaryWeight(s, now)})
		}
	}
	t.summariesMu.Lock()
	t.openedSummaries = opened // the summaries stored now: expired ones are forgotten
	t.summariesMu.Unlock()
	return auction.PriceStats(entries, since, until), nil
}

// summaryWeight is what a summary's parties' evidence earns it.
func (t *Trust) summaryWeight(s *auction.AwardSummary, now time.Time) float64 {
	self := t.selfStr
	if s.Renter == self || s.Provider == self {
		return 1
	}
	ev := t.evidence(s.Provider, true)
	if t.ev.of(s.Provider).everBacked && !ev.Backed(now) {
		// A provider that has left still backs the awards it made while
		// its record did.
		ev.RecordUntil = now.Add(time.Second)
	}
	w := ev.Weight(now)
	if !t.Renowned(s.Renter) {
		w /= 2
	}
	return w
}

// storeSummary keeps a verified award summary for the price index and
// notes the award, and the renter's list of bidders, as evidence that its
// providers bid.
func (t *Trust) storeSummary(raw []byte, sum *auction.AwardSummary) {
	expires := time.UnixMilli(sum.AtMs).Add(summaryRetention)
	if err := t.db.PutSummary(attest.RecordID(raw).String(), raw, expires); err != nil {
		t.log.Warn("store award summary", "err", err)
	}
	if sum.Provider != t.selfStr {
		t.noteWon(sum.Provider)
	}
	t.noteVouched(sum.Renter, sum.Bidders)
}
