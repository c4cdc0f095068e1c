package sim

import (
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// TestSecondPriceReserveInReplay: under second price the replay's market
// sets the renter's default reserve (auction.SecondPriceReserves over its
// price index), so fewer awards clear at the renter's maximum than
// without it (the idlegrid-no-reserve row, the node before issue 27).
func TestSecondPriceReserveInReplay(t *testing.T) {
	cfg := synthetic(300, 12, 1)
	cfg.Pricing = auction.PaySecond
	cfg.Policies = []string{PolicyIdlegrid, PolicyNoReserve}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	with, without := res.Runs[0], res.Runs[1]
	if with.Policy != PolicyIdlegrid || without.Policy != PolicyNoReserve {
		t.Fatalf("runs %s, %s", with.Policy, without.Policy)
	}
	t.Logf("awards at the maximum: %.3f with the reserve, %.3f without", with.AtMaxShare, without.AtMaxShare)
	if without.AtMaxShare == 0 {
		t.Fatal("without a reserve no award cleared at the maximum: the case does not test the reserve")
	}
	if with.AtMaxShare >= without.AtMaxShare {
		t.Fatalf("with the reserve %.3f of awards cleared at the maximum, without it %.3f", with.AtMaxShare, without.AtMaxShare)
	}
}
