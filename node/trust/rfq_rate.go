package trust

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/p2p"
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
	rfqForwarderPerSec = 20
	rfqForwarderBurst  = 100
	rfqNetworkPerSec   = 40
	rfqNetworkBurst    = 200
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

// verdict takes renter's RFQ from the buckets at now. Over the renter's
// own rate the RFQ is ignored (whoever forwards one renter's excess makes
// us work for nothing); over the forwarder's or its network's rate it is
// withheld, uncharged, since an honest relay forwards other peers' RFQs
// and cannot know what the whole network sent through it.
func (l *rfqLimits) verdict(renter string, renowned bool, from peer.ID, subnet string, now time.Time) p2p.Verdict {
	if renowned {
		if !l.renowned.take(now, renter) {
			return p2p.Ignore
		}
		return p2p.Accept
	}
	if !l.fresh.take(now, renter) {
		return p2p.Ignore
	}
	if !l.forwarder.take(now, string(from)) || !l.network.take(now, subnet) {
		return p2p.Withhold
	}
	return p2p.Accept
}
