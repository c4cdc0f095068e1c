package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
)

// Config is one replay: the inputs, the market's knobs and the seeds.
// Zero fields take the defaults fill sets, except FloorSpread (zero is
// no spread; DefaultConfig and the CLI use 0.2).
type Config struct {
	Jobs   []Job
	Nodes  []Node
	Prices PriceTable
	// Providers is how many nodes of Nodes take part, drawn per seed
	// (0: all); PoolScale then multiplies it (0: 1), so a replay can make
	// the same jobs meet a scarcer or more generous market.
	Providers int
	PoolScale float64
	// TimeScale divides arrival times (0: 1): 2 makes the trace arrive
	// twice as fast on the same providers.
	TimeScale float64
	// FloorSpread is the half-width of the seeded per-provider spread of
	// floors around the reference price (0.2: ±20%; 0: every provider
	// of a model at its reference price).
	FloorSpread float64
	// MaxPriceFactor is the renter's maximum as a multiple of the
	// dearest acceptable model's reference price.
	MaxPriceFactor float64
	// MaxWait is how long a job waits for GPUs before it counts as
	// unplaced (a rerun after a failure gets a fresh MaxWait).
	MaxWait time.Duration
	// FlakyShare of providers fail each lease with FlakyFailProb, at a
	// uniformly drawn point of it; the job then reruns from scratch.
	FlakyShare    float64
	FlakyFailProb float64
	// CheaterShare of providers return a wrong result for CheatRate of
	// their leases (exit 0, paid, indistinguishable from a right one);
	// the renter re-runs CanaryRate of its completed jobs on a second
	// provider (auction.CanaryDue, as the node's market.canary_rate), and
	// a mismatch excludes the liar ExclusionDelay later (cheat.go). Zero
	// CheatRate and ExclusionDelay take DefaultCheatRate and
	// DefaultExclusionDelay.
	CheaterShare   float64
	CheatRate      float64
	CanaryRate     float64
	ExclusionDelay time.Duration
	// Calendars gives every provider a weekday calendar (8-20 UTC at
	// 1.2x, Mon-Fri), so peak pricing and gap discounts take part. Its
	// windows abut: it never closes.
	Calendars bool
	// ClosingCalendars is the share of providers (drawn per seed) that
	// rent their GPUs in idle time only: open IdleOpenHours a day from a
	// seeded hour, closed the rest (they take the place of the weekday
	// calendar). Their hosts refuse work that would outlast the open
	// period, and bounded bidding must tell them from the others.
	ClosingCalendars float64
	// Pricing is the RFQ's pricing rule ("": first price).
	Pricing auction.PricingRule
	// Reputation is the renter's fold (zero: reputation.DefaultConfig
	// with a one-day half-life, since replays are short).
	Reputation reputation.Config
	// Bid is the providers' bidding policy (zero: auction.DefaultBidPolicy).
	Bid auction.BidPolicy
	// VerifyBidders makes every provider of idlegrid-bounded also decide
	// alone with auction.ShouldBid; a replay fails if any decision differs
	// from auction.SelectBidders (quadratic in the shard size per RFQ).
	VerifyBidders bool
	// Lots splits every shard of idlegrid-lots into that many lots by
	// peer-ID hash (0: DefaultLots), and its renter publishes each RFQ on
	// the LotsPerRFQ lots of each shard with the cheapest fitting offers
	// (0: DefaultLotsPerRFQ). Nodes read lots but use none yet
	// (docs/protocol.md §3.6): the replay measures what they cost renters.
	Lots, LotsPerRFQ int
	// LotsSeen is how many lots of each shard a renter follows (0: all):
	// its market view is those lots' digests, and it publishes on the
	// LotsPerRFQ cheapest of them. Each job is its own renter's, and a
	// renter follows the LotsSeen lots from the one its key hashes to
	// (auction.Lot), so renters spread evenly over the lots.
	LotsSeen int
	// Phantoms is how many providers on each shard of idlegrid-bounded
	// and idlegrid-lots gossip digests cheaper than any real one and never
	// bid (phantom.go); NoPrefixWatch leaves them in the nodes' views
	// rather than silencing them as the node does.
	Phantoms      int
	NoPrefixWatch bool
	// Seeds are the replays to run (empty: 1..5).
	Seeds []uint64
	// Policies are run in order (empty: AllPolicies).
	Policies []string
}

// The lots of idlegrid-lots: 4 lots of a shard, each RFQ on 2, so a
// provider receives about half its shard's RFQs (docs/protocol.md §3.6
// plans lots of 500 to 1,000 providers; a replay's shards of a few
// hundred split into 4 bound from above what lots cost renters).
const (
	DefaultLots       = 4
	DefaultLotsPerRFQ = 2
)

// DefaultConfig returns the defaults for jobs and nodes with prices.
func DefaultConfig(jobs []Job, nodes []Node, prices PriceTable) Config {
	c := Config{Jobs: jobs, Nodes: nodes, Prices: prices, FloorSpread: 0.2}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.PoolScale == 0 {
		c.PoolScale = 1
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.MaxPriceFactor == 0 {
		c.MaxPriceFactor = 2
	}
	if c.MaxWait == 0 {
		c.MaxWait = 24 * time.Hour
	}
	if c.FlakyFailProb == 0 {
		c.FlakyFailProb = 0.3
	}
	if c.CheatRate == 0 {
		c.CheatRate = DefaultCheatRate
	}
	if c.ExclusionDelay == 0 {
		c.ExclusionDelay = DefaultExclusionDelay
	}
	if c.Pricing == "" {
		c.Pricing = auction.PayBid
	}
	if c.Reputation.HalfLife == 0 {
		c.Reputation = reputation.DefaultConfig()
		c.Reputation.HalfLife = 24 * time.Hour
	}
	if c.Bid == (auction.BidPolicy{}) {
		c.Bid = auction.DefaultBidPolicy()
	}
	if c.Lots == 0 {
		c.Lots = DefaultLots
	}
	if c.LotsPerRFQ == 0 {
		c.LotsPerRFQ = DefaultLotsPerRFQ
	}
	if len(c.Seeds) == 0 {
		c.Seeds = []uint64{1, 2, 3, 4, 5}
	}
	if len(c.Policies) == 0 {
		c.Policies = AllPolicies()
	}
}

// Validate reports the first unusable field.
func (c *Config) Validate() error {
	switch {
	case len(c.Jobs) == 0:
		return fmt.Errorf("sim: no jobs")
	case len(c.Nodes) == 0:
		return fmt.Errorf("sim: no nodes")
	case c.FloorSpread < 0 || c.FloorSpread >= 1:
		return fmt.Errorf("sim: floor spread %v: must be within 0..1", c.FloorSpread)
	case c.ClosingCalendars < 0 || c.ClosingCalendars > 1:
		return fmt.Errorf("sim: closing-calendar share %v: must be within 0..1", c.ClosingCalendars)
	case c.FlakyShare < 0 || c.FlakyShare > 1 || c.FlakyFailProb < 0 || c.FlakyFailProb > 1:
		return fmt.Errorf("sim: flaky share %v, fail probability %v: must be within 0..1", c.FlakyShare, c.FlakyFailProb)
	case c.CheaterShare < 0 || c.CheaterShare > 1 || c.CheatRate < 0 || c.CheatRate > 1 || c.CanaryRate < 0 || c.CanaryRate > 1:
		return fmt.Errorf("sim: cheater share %v, cheat rate %v, canary rate %v: must be within 0..1", c.CheaterShare, c.CheatRate, c.CanaryRate)
	case c.Lots < 1 || c.Lots&(c.Lots-1) != 0 || c.LotsPerRFQ < 1:
		return fmt.Errorf("sim: %d lots, %d per RFQ: lots must be a power of two and each RFQ on at least one", c.Lots, c.LotsPerRFQ)
	case c.Phantoms < 0 || c.Phantoms > auction.MaxWantBids:
		return fmt.Errorf("sim: %d phantoms a shard: must be 0 to %d", c.Phantoms, auction.MaxWantBids)
	case c.LotsSeen < 0 || c.LotsSeen > c.Lots:
		return fmt.Errorf("sim: a renter following %d of %d lots: must be 0 (all) up to the lots", c.LotsSeen, c.Lots)
	case c.ExclusionDelay < 0:
		return fmt.Errorf("sim: exclusion delay %v: must not be negative", c.ExclusionDelay)
	case c.PoolScale < 0 || c.TimeScale < 0 || c.MaxPriceFactor < 1:
		return fmt.Errorf("sim: pool scale %v, time scale %v must be positive, max price factor %v at least 1",
			c.PoolScale, c.TimeScale, c.MaxPriceFactor)
	}
	if err := c.Reputation.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	for _, p := range c.Policies {
		if _, ok := policies[p]; !ok {
			return fmt.Errorf("sim: unknown policy %q (have %v)", p, AllPolicies())
		}
	}
	return nil
}

// ParsePricing reads an RFQ pricing rule: "first" or "second".
func ParsePricing(s string) (auction.PricingRule, error) {
	switch r := auction.PricingRule(strings.ToLower(s)); r {
	case auction.PayBid, auction.PaySecond:
		return r, nil
	}
	return "", fmt.Errorf("sim: pricing %q: want first or second", s)
}
