package node

import (
	"reflect"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/sim"
	"github.com/idlegrid/idlegrid/node/renter"
	"github.com/idlegrid/idlegrid/node/trust"
)

// TestSimulatorRunsTheNodesDefaults is issue 27's divergence test: the
// simulator's idlegrid-node row (sim.DefaultNodePolicy) must be what a
// default-configured node runs. A default changed on one side only fails
// here; change both, or name the variant as a row of its own.
func TestSimulatorRunsTheNodesDefaults(t *testing.T) {
	np := sim.DefaultNodePolicy()
	for _, role := range []Role{RoleRenter, RoleProvider} {
		m := DefaultConfig(role).Market
		for _, d := range []struct {
			name      string
			node, sim any
		}{
			{"market.reliability_prior", m.ReliabilityPrior, np.Reputation.Prior},
			{"market.want_bids", m.WantBids, np.WantBids},
			{"market.canary_rate", m.CanaryRate, np.CanaryRate},
			{"market.reauction", m.Reauction, np.Reauction},
			{"market.max_wait", m.MaxWait, np.MaxWait},
			{"the renter's shortest re-auction wait", renter.ReauctionMinWait, np.ReauctionMinWait},
			{"the renter's reputation fold", trust.ReputationConfig(m.ReliabilityPrior), np.Reputation},
			{"the renter's matcher weights", renter.MatchWeights(), np.Weights},
			// node/provider prices with auction.DefaultBidPolicy (plus its
			// notice and bid validity, which set no price).
			{"the providers' bid policy", auction.DefaultBidPolicy(), np.Bid},
		} {
			if !reflect.DeepEqual(d.node, d.sim) {
				t.Errorf("%s node: %s is %+v, the simulator's idlegrid-node row uses %+v", role, d.name, d.node, d.sim)
			}
		}
	}
	if !np.SecondPriceReserve {
		t.Error("the renter sets a second-price reserve from the price index (renter.Config.PriceIndex); the simulator's node row does not")
	}
}
