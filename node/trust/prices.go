package trust

import (
	"fmt"
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
// summaries this node holds (summary_book.go), over [since, until).
func (t *Trust) PriceIndex(since, until time.Time) ([]auction.PriceStat, error) {
	if err := t.summaries.load(t.db); err != nil {
		return nil, fmt.Errorf("trust.PriceIndex: %w", err)
	}
	now := t.now()
	held := t.summaries.current(now)
	entries := make([]auction.PriceEntry, 0, len(held))
	weigh := summaryWeigher(t, now)
	for _, h := range held {
		if !since.IsZero() && h.s.AtMs < since.UnixMilli() || !until.IsZero() && h.s.AtMs >= until.UnixMilli() {
			continue // PriceStats leaves it out too; no need to weigh it
		}
		entries = append(entries, auction.PriceEntry{Summary: h.s, Weight: weigh(&h.s)})
	}
	return auction.PriceStats(entries, since, until), nil
}

// summaryWeigher returns what a summary's parties' evidence earns it at
// now, asking for each provider's evidence and each renter's renown once
// in a reading.
func summaryWeigher(t *Trust, now time.Time) func(s *auction.AwardSummary) float64 {
	providers := map[string]float64{}
	renowned := map[string]bool{}
	return func(s *auction.AwardSummary) float64 {
		self := t.selfStr
		if s.Renter == self || s.Provider == self {
			return 1
		}
		w, ok := providers[s.Provider]
		if !ok {
			ev := t.evidence(s.Provider, true)
			if t.ev.of(s.Provider).everBacked && !ev.Backed(now) {
				// A provider that has left still backs the awards it
				// made while its record did.
				ev.RecordUntil = now.Add(time.Second)
			}
			w = ev.Weight(now)
			providers[s.Provider] = w
		}
		r, ok := renowned[s.Renter]
		if !ok {
			r = t.Renowned(s.Renter)
			renowned[s.Renter] = r
		}
		if !r {
			w /= 2
		}
		return w
	}
}

// storeSummary keeps a verified award summary for the price index when
// the summary book takes it (of a provider this node checked a record of,
// or its own), and notes the award, and the renter's list of bidders, as
// evidence that its providers bid.
func (t *Trust) storeSummary(raw []byte, sum *auction.AwardSummary) {
	own := sum.Renter == t.selfStr || sum.Provider == t.selfStr
	if !own && !t.everBacked(sum.Provider) {
		// It weighs nothing in the index, and any two keys can make one.
		t.summariesDropped.WithLabelValues(summaryDropUnbacked).Inc()
	} else {
		id := attest.RecordID(raw).String()
		keep, drop := t.summaries.admit(id, sum)
		if keep {
			expires := time.UnixMilli(sum.AtMs).Add(summaryRetention)
			if err := t.db.PutSummary(id, raw, expires); err != nil {
				t.log.Warn("store award summary", "err", err)
			}
		}
		if len(drop) > 0 {
			if err := t.db.DeleteSummaries(drop); err != nil {
				t.log.Warn("drop award summaries", "err", err) // badger's TTL drops them in 7 days
			}
		}
	}
	if sum.Provider != t.selfStr {
		t.noteWon(sum.Provider)
	}
	t.noteVouched(sum.Renter, sum.Bidders)
}
