package auction

import (
	"fmt"
	"slices"
	"time"
)

// Evidence behind a digest (docs/protocol.md §6.5). A digest is a claim its
// own key signed, and keys are free: a node that believed every digest let
// 200 fresh keys claiming cheap GPUs shut its market. So a digest moves
// nothing until the node has checked evidence of its provider, in levels:
//
//   - held: signed and current, kept while the node checks it; it moves
//     nothing (no search result, no shard, no expected bid);
//   - backed: a current capacity record of the provider, fetched from the
//     DHT, matches the digest (DigestMatchesRecord). Backed providers are
//     the market search's default, rank the shards an RFQ goes to and are
//     passed on to syncing peers;
//   - proven: backed, and seen to bid: a bid this node received, an award
//     the provider accepted (a summary carrying its acceptance), a renter
//     with receipts listing it among an auction's bidders, or a receipt it
//     issued. Only proven providers fill the always-bid prefix of bid
//     selection and count in the market signal of scarcity pricing (the
//     others bid by their own view: BidSelectInput.Newcomers);
//   - silent: expected by this node's own auctions SilentAfter times in a
//     row and never answering; left out of its expected bidders for
//     SilentFor.

// ProviderEvidence is what one node has checked about one provider.
type ProviderEvidence struct {
	// RecordUntil is when the capacity record that matched the provider's
	// digest expires; zero while none has matched.
	RecordUntil time.Time
	// Bids counts bids this node received from the provider.
	Bids int
	// Won counts award summaries carrying the provider's acceptance.
	Won int
	// Vouched counts renters with receipts (renowned at this node) whose
	// award summaries list the provider among an auction's bidders.
	Vouched int
	// Receipts counts receipts the provider issued to other renters.
	Receipts int
	// Reachable: connected now and serving the lease protocol.
	Reachable bool
	// Missed counts this node's auctions, since the provider's last bid,
	// in which the selection rule expected its bid and none came; LastMiss
	// is the latest.
	Missed   int
	LastMiss time.Time
}

// Silence: a provider expected SilentAfter times in a row without a bid is
// silent for SilentFor after its last miss.
const (
	SilentAfter = 3
	SilentFor   = 10 * time.Minute
)

// Backed reports whether a matched capacity record is current at now.
func (e ProviderEvidence) Backed(now time.Time) bool { return now.Before(e.RecordUntil) }

// Proven reports whether the provider is backed and was seen to bid.
func (e ProviderEvidence) Proven(now time.Time) bool {
	return e.Backed(now) && (e.Bids > 0 || e.Won > 0 || e.Vouched > 0 || e.Receipts > 0)
}

// Silent reports whether the provider stopped answering this node's
// auctions.
func (e ProviderEvidence) Silent(now time.Time) bool {
	return e.Missed >= SilentAfter && now.Sub(e.LastMiss) < SilentFor
}

// maxEvidencePoints is the most points Weight counts.
const maxEvidencePoints = 7

// Weight is how much the provider's word counts, in [0, 1]: 0 unless
// backed; then a point for the record, one per receipt to another renter
// (at most 3), one for an accepted or vouched-for bid, one for a bid to
// this node and one for being reachable, out of 7. The price index weighs
// the provider's side of a summary by it.
func (e ProviderEvidence) Weight(now time.Time) float64 {
	if !e.Backed(now) {
		return 0
	}
	points := 1 + min(e.Receipts, 3)
	for _, b := range []bool{e.Won > 0 || e.Vouched > 0, e.Bids > 0, e.Reachable} {
		if b {
			points++
		}
	}
	return float64(points) / maxEvidencePoints
}

// DigestMatchesRecord checks that a capacity record c backs digest d at
// now: the same provider, current, and every shard the digest claims is
// one the record serves, so a digest cannot claim GPU families its
// provider's own record does not list. The record may be older than the
// one the digest names (cap_seq): a provider puts a new record at every
// hold, lease and release of a GPU, and a node that backed it passes its
// newer digests on without fetching each new record as long as they claim
// only shards the record it checked serves (node/trust). A node checking a
// digest one of them passed on is handed that record, and must judge it
// by the same rule, or it drops an honest provider for ten minutes and
// charges the honest relay (seen at 500 nodes: a fresh renter's view
// stayed incomplete for minutes, docs/benchmarks.md).
func DigestMatchesRecord(d *Digest, c *Capacity, now time.Time) error {
	switch {
	case c.Peer != d.Peer:
		return fmt.Errorf("auction.DigestMatchesRecord: the record is %s's, the digest %s's", c.Peer, d.Peer)
	case c.Expired(now):
		return fmt.Errorf("auction.DigestMatchesRecord: %w", ErrExpired)
	}
	serves := ProviderShards(c)
	for _, s := range d.Shards() {
		if !slices.Contains(serves, s) {
			return fmt.Errorf("auction.DigestMatchesRecord: the digest claims shard %s, the record does not serve it", s)
		}
	}
	return nil
}
