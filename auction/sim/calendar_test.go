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

// TestBoundedBiddingWithClosingCalendars: half the hosts rent only 8
// hours a day and jobs run hours, so at any time some cheap hosts are
// open but closing too soon. Bounded bidding still asks hosts that can
// take each job: its RFQs draw nearly the bids they could (turnout: bids
// over min(want_bids, hosts that could take the job)) and no more than
// 2x want_bids, and the renter fills as much as when everyone bids, at a
// cost within 2%. The rule before issue 27 (calendar-blind) draws fewer.
// Every provider's own decision is checked against the renter's
// (VerifyBidders).
func TestBoundedBiddingWithClosingCalendars(t *testing.T) {
	cfg := synthetic(400, 150, 0.9)
	cfg.FlakyShare, cfg.ClosingCalendars, cfg.VerifyBidders = 0, 0.5, true
	for i := range cfg.Jobs { // hours-long jobs, which idle-time hosts often cannot finish
		cfg.Jobs[i].DurationSec *= 6
	}
	cfg.fill()
	blindBounded := func() policy { m := newMarket(marketIdlegrid); m.bounded, m.calendarBlind = true, true; return m }
	for _, seed := range cfg.Seeds {
		run := func(name string, pol policy) Metrics {
			r, err := runReplay(&cfg, seed, pol)
			if err != nil {
				t.Fatal(err)
			}
			return r.measure(name)
		}
		every, bounded, blind := run("every", policies[PolicyIdlegrid]()), run("bounded", policies[PolicyBounded]()), run("blind", blindBounded())
		t.Logf("seed %d: everyone bids %.1f/RFQ fill %.4f cost %.0f; bounded %.1f/RFQ fill %.4f cost %.0f turnout %.3f; calendar-blind %.1f/RFQ fill %.4f turnout %.3f",
			seed, every.BidsPerRFQ, every.Fill, every.CostUSD, bounded.BidsPerRFQ, bounded.Fill, bounded.CostUSD, bounded.Turnout,
			blind.BidsPerRFQ, blind.Fill, blind.Turnout)
		if bounded.Turnout < 0.95 || bounded.BidsPerRFQ > 2*auction.DefaultWantBids {
			t.Errorf("seed %d: bounded bidding drew %.1f bids per RFQ, turnout %.3f", seed, bounded.BidsPerRFQ, bounded.Turnout)
		}
		if bounded.Fill < every.Fill || bounded.CostUSD > 1.02*every.CostUSD {
			t.Errorf("seed %d: bounded fill %.4f cost %.0f, everyone bids %.4f %.0f", seed, bounded.Fill, bounded.CostUSD, every.Fill, every.CostUSD)
		}
		if blind.Turnout > bounded.Turnout-0.02 {
			t.Errorf("seed %d: the calendar-blind rule's turnout %.3f: the fixture does not test the calendars", seed, blind.Turnout)
		}
	}
}
