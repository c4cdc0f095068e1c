package renter

import (
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// maxColdLosersShown bounds the outranked cold bids one "model" event
// names; the rest are counted.
const maxColdLosersShown = 3

// modelNote says, for an RFQ that names a model, whether the winner
// holds it or must download it first (the cold start the match charged).
func modelNote(rfq *auction.RFQ, alloc auction.Allocation) string {
	switch {
	case rfq.Model == nil:
		return ""
	case alloc.ColdStart == 0:
		return "; model warm (on the provider's disk)"
	}
	return fmt.Sprintf("; model cold: about %s to download, charged in the match", roundColdStart(alloc.ColdStart))
}

// modelHostsOf is what each bidder's capacity record (as unbacked found
// it; nil: none) says of the RFQ's model m: held or not, and the declared
// download bandwidth the matcher charges a cold start by. nil when the
// RFQ names no model.
func modelHostsOf(m *auction.ModelRef, records map[string]*auction.Capacity) map[string]auction.ModelHost {
	if m == nil {
		return nil
	}
	out := make(map[string]auction.ModelHost, len(records))
	for prov, rec := range records {
		if rec != nil {
			out[prov] = auction.ModelHostOf(m, rec)
		}
	}
	return out
}

// noteColdLosers records, for an RFQ that names a model, the bids that
// lost with a cold start charged (auction.Match's reason names it), so a
// renter sees why a cheaper provider lost to a warm one.
func (ar *awarder) noteColdLosers(jobID string, rfq *auction.RFQ, plan auction.Plan) {
	if rfq.Model == nil {
		return
	}
	var shown []string
	n := 0
	for _, l := range plan.Losers {
		if l.Code != auction.RejectOutranked || !strings.Contains(l.Reason, "cold start") {
			continue
		}
		n++
		if len(shown) < maxColdLosersShown {
			shown = append(shown, lease.Short(l.Provider)+": "+l.Reason)
		}
	}
	if n == 0 {
		return
	}
	msg := strings.Join(shown, "; ")
	if n > len(shown) {
		msg += fmt.Sprintf("; and %d more", n-len(shown))
	}
	ar.jobs.event(jobID, "model", "bids outranked with the model's download charged: %s", msg)
}

// roundColdStart shows a download time to the second, or to the
// millisecond under a second.
func roundColdStart(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
