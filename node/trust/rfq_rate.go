package trust

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// The RFQ rates every node's validator applies. Each renter key has its
// own rate, higher for a renter holding receipts from providers this node
// has evidence of (renowned): one key cannot make every provider quote
// for it without bound. Keys are free, though, so a fresh renter's RFQs
// also spend the budget of the peer that forwarded them and of that
// peer's network (/24): a flood of RFQs from a new key per message is
// bounded where it enters, and renters with a history pass untouched.
const (
	rfqRenownedPerSec  = 5
	rfqRenownedBurst   = 50
	rfqFreshPerSec     = 2
	rfqFreshBurst      = 20
	rfqForwarderPerSec = 5
	rfqForwarderBurst  = 50
	rfqNetworkPerSec   = 10
	rfqNetworkBurst    = 100
	// rfqRateKeys bounds each kind's buckets; the least recently seen key
	// is forgotten first.
	rfqRateKeys = 10_000
)

// rfqLimits are the RFQ rate buckets of one node.
type rfqLimits struct {
	renowned, fresh, forwarder, network *budgets
}

func newRFQLimits() *rfqLimits {
	return &rfqLimits{
		renowned:  newBudgets(rfqRenownedPerSec, rfqRenownedBurst, rfqRateKeys),
		fresh:     newBudgets(rfqFreshPerSec, rfqFreshBurst, rfqRateKeys),
		forwarder: newBudgets(rfqForwarderPerSec, rfqForwarderBurst, rfqRateKeys),
		network:   newBudgets(rfqNetworkPerSec, rfqNetworkBurst, rfqRateKeys),
	}
}

// entry takes a fresh renter's RFQ from the budgets of the peer that
// forwarded it and of that peer's network at now. Over them the RFQ is
// withheld, uncharged: an honest relay forwards other peers' RFQs and
// cannot know what the whole network sent through it.
func (l *rfqLimits) entry(from peer.ID, subnet string, now time.Time) bool {
	return l.forwarder.take(now, string(from)) && l.network.take(now, subnet)
}

// renter takes one RFQ from renter's own bucket at now. Over it the RFQ is
// ignored: whoever forwards one renter's excess makes us work for nothing.
func (l *rfqLimits) renter(renter string, renowned bool, now time.Time) bool {
	if renowned {
		return l.renowned.take(now, renter)
	}
	return l.fresh.take(now, renter)
}
