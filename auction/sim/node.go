package sim

import (
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
)

// The node's defaults (issue 27, "one policy, two callers"). The
// idlegrid-node row replays what a default-configured node does, from
// DefaultNodePolicy, and a test in package node fails when a default of
// the node's config, renter or trust no longer equals it.

// PolicyNode is the node's defaults as DefaultNodePolicy sets them;
// PolicyNodeNoWait the same with market.max_wait 0, where a job whose
// first auction finds no plan is unfilled (the node before it waited),
// to tell the wait's effect from the other defaults'.
const (
	PolicyNode       = "idlegrid-node"
	PolicyNodeNoWait = "idlegrid-node-nowait"
)

// PolicyNodeCalendarBlind is the node's defaults with bounded bidding as
// it was before it knew calendars (issue 27): providers about to close
// fill the always-bid prefix, and want_bids is the same for every job.
const PolicyNodeCalendarBlind = "idlegrid-node-calblind"

// NodePolicy is the market a default node runs: the renter's matching
// inputs, the providers' pricing and what the renter does with a job
// whose auction finds no plan.
type NodePolicy struct {
	// Weights are the renter's matcher weights (node/renter MatchWeights).
	Weights auction.Weights
	// Reputation is the renter's fold (node/trust ReputationConfig). Its
	// Prior, market.reliability_prior, scores a provider with no
	// evidence; the idlegrid row uses the market's own record instead.
	Reputation reputation.Config
	// WantBids is market.want_bids: providers bid only when
	// auction.SelectBidders picks them (bounded bidding).
	WantBids int
	// Bid is the providers' pricing (node/provider's bid policy, less its
	// notice and validity, which do not set prices).
	Bid auction.BidPolicy
	// SecondPriceReserve gives a second-price RFQ the price index's
	// reserve (auction.SecondPriceReserves), as the renter does.
	SecondPriceReserve bool
	// CanaryRate is market.canary_rate.
	CanaryRate float64
	// MaxWait is market.max_wait: a job whose auction finds no plan is
	// auctioned again until MaxWait after its arrival (0: it is unfilled
	// at once). The node tries again within a minute (its backoff); the
	// replay, whenever GPUs free up. Work whose provider failed is
	// auctioned again, avoiding that provider, when Reauction is on (as
	// market.reauction), and waits MaxWait from then, at least
	// ReauctionMinWait (node/renter's).
	MaxWait          time.Duration
	Reauction        bool
	ReauctionMinWait time.Duration
}

// DefaultNodePolicy is a default node's market.
func DefaultNodePolicy() NodePolicy {
	return NodePolicy{
		Weights:            auction.DefaultWeights(),
		Reputation:         reputation.DefaultConfig(),
		WantBids:           auction.DefaultWantBids,
		Bid:                auction.DefaultBidPolicy(),
		SecondPriceReserve: true,
		MaxWait:            auction.DefaultMaxWait,
		Reauction:          true,
		ReauctionMinWait:   90 * time.Second,
	}
}

// newNodeMarket is the idlegrid-node row's market.
func newNodeMarket(np NodePolicy) *market {
	m := newMarket(marketIdlegrid)
	m.node = &np
	m.weights = np.Weights
	m.bounded = true
	m.wantBids = np.WantBids
	m.noReserve = !np.SecondPriceReserve
	return m
}

// setup makes the replay the node's: the renter's fold with the node's
// prior, failed work avoiding the provider that failed it, the wait for
// a first plan and for a re-auction's.
func (m *market) setup(r *replay) {
	if m.node == nil {
		return
	}
	r.w.rep = reputation.NewRunning(m.node.Reputation)
	r.avoidFailed = true
	r.firstWait = int64(m.node.MaxWait / time.Second)
	r.rerunWait = -1
	if m.node.Reauction {
		r.rerunWait = int64(max(m.node.MaxWait, m.node.ReauctionMinWait) / time.Second)
	}
	for _, j := range r.jobs {
		j.deadline = j.arrival + r.firstWait
	}
}
