package sim

import (
	"reflect"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// TestNodeRowIsTheNodesMarket checks the idlegrid-node row's wiring: it
// matches with DefaultNodePolicy's weights and bounded bidding, and like
// the node's renter it marks a job unfilled when its first auction finds
// no plan, where idlegrid-node-wait (and idlegrid) let it wait for GPUs.
func TestNodeRowIsTheNodesMarket(t *testing.T) {
	m, ok := policies[PolicyNode]().(*market)
	np := DefaultNodePolicy()
	if !ok || m.weights != np.Weights || !m.bounded || m.wantBids != np.WantBids || m.noReserve != !np.SecondPriceReserve || !reflect.DeepEqual(*m.node, np) {
		t.Fatalf("idlegrid-node row: %+v, want the market of %+v", m, np)
	}
	// One 4-GPU host; two 4-GPU one-hour jobs arrive together.
	h := int64(3600)
	cfg := Config{
		Jobs: []Job{
			{ID: 0, ArrivalSec: 0, DurationSec: h, GPUs: 4, Tier: auction.TierSilver},
			{ID: 1, ArrivalSec: 0, DurationSec: h, GPUs: 4, Tier: auction.TierSilver},
		},
		Nodes:  []Node{{Name: "A", Model: "x", GPUs: 4}},
		Prices: PriceTable{"x": 1_000_000},
		Seeds:  []uint64{1}, Policies: []string{PolicyNode, PolicyNodeWait, PolicyIdlegrid},
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{PolicyNode: 0.5, PolicyNodeWait: 0, PolicyIdlegrid: 0}
	for _, r := range res.Runs {
		if r.Unplaced != want[r.Policy] {
			t.Errorf("%s: unplaced %v, want %v", r.Policy, r.Unplaced, want[r.Policy])
		}
	}
}
