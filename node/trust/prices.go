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
	var entries []auction.PriceEntry
	for _, raw := range raws {
		// Stored summaries were verified on arrival and are verified
		// again, since the store is not a trust boundary.
		if s, _, err := auction.OpenAwardSummary(raw); err == nil {
			entries = append(entries, auction.PriceEntry{Summary: *s, Weight: t.summaryWeight(s, now)})
		}
	}
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
