package auction

import (
	"fmt"
	"testing"
)

// Lots are even (a hash, whatever the peers' geography), and doubling
// their number splits each lot in two: a provider of lot i of G is in lot
// i or i + G of 2G.
func TestLotsAreEvenAndSplitInTwo(t *testing.T) {
	const peers, lots = 16_000, 8
	count := make([]int, lots)
	for i := range peers {
		p := fmt.Sprintf("12D3KooWpeer%06d", i)
		l := Lot(p, lots)
		count[l]++
		if l2 := Lot(p, 2*lots); l2%lots != l {
			t.Fatalf("%s: lot %d of %d, lot %d of %d", p, l, lots, l2, 2*lots)
		}
	}
	for l, n := range count {
		if n < peers/lots*9/10 || n > peers/lots*11/10 {
			t.Errorf("lot %d holds %d of %d peers, want %d ± 10%%: %v", l, n, peers, peers/lots, count)
		}
	}
	if Lot("anyone", 1) != 0 || Lot("anyone", 0) != 0 {
		t.Error("a shard of one lot has lot 0 only")
	}
}
