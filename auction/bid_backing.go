package auction

import (
	"fmt"
	"time"
)

// Bids need evidence. A bid is a claim its own key signed, and keys are
// free: a peer with no GPU can bid any model at any price under a made-up
// GPU UUID. So a renter that checks bids refuses one its provider's
// current capacity record does not back (BidBacking), and the matcher
// reports it as RejectUnbacked in bid-lost and unfilled explanations.
//
// Newcomers are not locked out: publishing a capacity record is all a
// provider needs for its bids to count. Until it has verified history at
// a renter (a lease the renter recorded completed, which takes its signed
// chain and output), its reliability is the renter's prior
// (market.reliability_prior), so it wins on price but loses ties to
// providers with a record, and gold work needs the gold badge when
// market.gold_needs_badge is on.

// BidBacking says why rec, the bidding provider's capacity record as the
// renter fetched it (nil: none found), does not back b; "" when it does.
// A record backs a bid when it is the provider's, is current at now, lists
// every GPU the bid offers with the bid's model, names the bid's region,
// and, for GPU bids, names a hardware fingerprint attestation (a host
// with GPUs appends one to its chain at start). A CPU-only bid needs the
// record's CPU offer.
func BidBacking(b *Bid, rec *Capacity, now time.Time) string {
	switch {
	case b == nil:
		return "no bid"
	case rec == nil:
		return "no capacity record of the provider was found"
	case rec.Peer != b.Provider:
		return fmt.Sprintf("the capacity record found is %s's, not the bidder's", rec.Peer)
	case rec.Expired(now):
		return "the provider's capacity record has expired"
	case rec.Region.Country != b.Region:
		return fmt.Sprintf("the bid says region %q, the provider's record %q", b.Region, rec.Region.Country)
	}
	if len(b.GPUs) == 0 {
		if rec.CPU == nil {
			return "a CPU-only bid, but the provider's record offers no CPU share"
		}
		return ""
	}
	if rec.FingerprintID == "" {
		return "the provider's record names no hardware fingerprint"
	}
	for _, uuid := range b.GPUs {
		g, ok := rec.gpu(uuid)
		switch {
		case !ok:
			return fmt.Sprintf("GPU %s is not in the provider's record", uuid)
		case g.Model != b.Model:
			return fmt.Sprintf("GPU %s is a %s in the provider's record, the bid says %s", uuid, g.Model, b.Model)
		}
	}
	return ""
}

// gpu returns the record's GPU with that UUID.
func (c *Capacity) gpu(uuid string) (GPU, bool) {
	for _, g := range c.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return GPU{}, false
}
