package sim

import (
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestClosedHostsAreNotBusy: the market signal is the busy share of the
// GPUs for rent now. A host outside its calendar counts for nothing: of
// hosts A (4 GPUs, 2 leased) and B (2 GPUs, closed at the replay's start,
// a Monday 00:00), half the GPUs for rent are busy, not a third (B idle)
// nor two thirds (B busy, as closed digests read before).
func TestClosedHostsAreNotBusy(t *testing.T) {
	cfg := tenJobs()
	cfg.fill()
	w := newWorld(&cfg, 1)
	a, b := w.provs[0], w.provs[1]
	b.cap.Calendar = []auction.Window{{Day: time.Monday, StartMin: 8 * 60, EndMin: 20 * 60, FactorPermille: 1000}}
	w.calendars = true
	for _, g := range a.freeGPUs(2) {
		a.cap.GPUs[g].Free = false
	}
	a.free -= 2
	w.freeByModel["x"] -= 2
	w.busyByModel["x"] += 2
	if u := w.utilization([]string{"x"}); u != 0.5 {
		t.Errorf("utilization %.3f, want 0.5", u)
	}
	w.now = 9 * 3600 // B is open: 2 busy of 6
	if u := w.utilization([]string{"x"}); u != 2.0/6 {
		t.Errorf("B open: utilization %.3f, want 0.333", u)
	}
}
