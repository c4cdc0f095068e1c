package sim

import (
	"reflect"
	"slices"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// TestNodeRowIsTheNodesMarket checks the idlegrid-node row's wiring: it
// matches with DefaultNodePolicy's weights and bounded bidding, and like
// the node's renter it lets a job wait for GPUs (market.max_wait), where
// idlegrid-node-nowait marks it unfilled when its first auction finds no
// plan.
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
		Seeds:  []uint64{1}, Policies: []string{PolicyNode, PolicyNodeNoWait, PolicyIdlegrid},
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{PolicyNode: 0, PolicyNodeNoWait: 0.5, PolicyIdlegrid: 0}
	for _, r := range res.Runs {
		if r.Unplaced != want[r.Policy] {
			t.Errorf("%s: unplaced %v, want %v", r.Policy, r.Unplaced, want[r.Policy])
		}
	}
}

// TestNodeRowAvoidsTheProviderThatFailed: as the node's renter, the row
// re-auctions failed work away from the provider that failed it.
func TestNodeRowAvoidsTheProviderThatFailed(t *testing.T) {
	cfg := synthetic(400, 20, 0.8)
	cfg.FlakyShare, cfg.FlakyFailProb = 0.3, 0.5
	cfg.fill()
	r, err := runReplay(&cfg, 1, policies[PolicyNode]())
	if err != nil {
		t.Fatal(err)
	}
	failedBy := map[*jobState][]int{}
	reruns := 0
	for _, l := range r.leases {
		if slices.Contains(failedBy[l.job], l.prov) {
			t.Errorf("job %d attempt %d leased again to provider %d, which failed it", l.job.ID, l.job.attempt, l.prov)
		}
		if len(failedBy[l.job]) > 0 {
			reruns++
		}
		if l.culprit {
			failedBy[l.job] = append(failedBy[l.job], l.prov)
		}
	}
	if reruns == 0 {
		t.Fatal("no failed work was re-auctioned: the test needs some")
	}
}
