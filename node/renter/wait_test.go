package renter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// rfqFeed subscribes provider f to the h100 shard and calls onRFQ with
// each RFQ it carries, numbered from 1.
func rfqFeed(t *testing.T, f *fakeProvider, onRFQ func(n int, rfq *auction.RFQ, rfqID string)) {
	t.Helper()
	var (
		mu sync.Mutex
		n  int
	)
	if err := f.P2P.Subscribe(t.Context(), auction.GPUShard("h100").RFQTopic(), func(m p2p.Message) {
		rfq, _, err := auction.OpenRFQ(m.Data)
		if err != nil {
			t.Errorf("unreadable RFQ: %v", err)
			return
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		onRFQ(k, rfq, attest.RecordID(m.Data).String())
	}); err != nil {
		t.Fatal(err)
	}
}

// sendBid has f bid on the RFQ through the renter's bid handler.
func sendBid(t *testing.T, r *Renter, f *fakeProvider, rfq *auction.RFQ, rfqID string) {
	b, _ := bid(t, f, rfq, rfqID, 1, 1.00)
	raw, err := auction.SealBid(b, f.Key)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := r.HandleBid(context.Background(), f.ID, raw); err != nil {
		t.Errorf("bid refused: %v", err)
	}
}

func kinds(evs []store.JobEvent, kind string) (n int, last string) {
	for _, e := range evs {
		if e.Kind == kind {
			n, last = n+1, e.Message
		}
	}
	return n, last
}

// TestJobWaitsForAPlan: a job whose first auction gets no bid is not
// unfilled while its wait lasts (market.max_wait): it is auctioned again,
// and leased once a provider bids. The wait is one stored `waiting`
// event naming why; the tries' RFQs are not stored as events each.
func TestJobWaitsForAPlan(t *testing.T) {
	r, _, provs := newRenterWith(t, 1, func(c *Config) { c.MaxWait = time.Hour })
	roomtest.Run(t, r.Run)
	roomtest.Eventually(t, 10*time.Second, "the renter to run", func() bool { return r.bg.running() })
	rfqFeed(t, provs[0], func(n int, rfq *auction.RFQ, rfqID string) {
		if n >= 3 { // silent on the first two auctions
			go sendBid(t, r, provs[0], rfq, rfqID)
		}
	})
	j, err := r.Submit(fmt.Appendf(nil, "module: %s\ngpus: 1\ngpu: h100\nmax_price: 10\nduration: 10m\nbid_window: 1s\n", testModule))
	if err != nil {
		t.Fatal(err)
	}
	roomtest.Eventually(t, 2*time.Minute, "the job to be leased after waiting", func() bool {
		cur, err := r.db.GetJob(j.ID)
		if err == nil && lease.JobState(cur.State).Terminal() {
			t.Fatalf("job ended %s while it could wait: %s", cur.State, cur.Reason)
		}
		j = cur
		return err == nil && j.State == lease.JobRunning
	})
	waits, msg := kinds(j.Events, "waiting")
	if waits != 1 || !strings.Contains(msg, "no plan yet") || !strings.Contains(msg, "market.max_wait 1h0m0s") {
		t.Fatalf("%d waiting events, the last %q; want one naming the wait and market.max_wait:\n%s", waits, msg, eventText(j.Events))
	}
	if rfqs, _ := kinds(j.Events, "rfq"); rfqs != 1 || len(j.RFQs) != 3 {
		t.Fatalf("%d rfq events and %d RFQs kept; want the first auction's event and all 3 RFQs:\n%s", rfqs, len(j.RFQs), eventText(j.Events))
	}
}

// TestJobWaitEndsAtStartBy: a job's start_by bounds its wait whatever
// market.max_wait says; past it, the job ends unfilled saying how many
// auctions found no plan and for how long.
func TestJobWaitEndsAtStartBy(t *testing.T) {
	r, me, provs := newRenterWith(t, 1, func(c *Config) { c.MaxWait = time.Hour })
	roomtest.Run(t, r.Run)
	roomtest.Eventually(t, 10*time.Second, "the renter to run", func() bool { return r.bg.running() })
	rfqFeed(t, provs[0], func(int, *auction.RFQ, string) {}) // a shard with a subscriber, who never bids
	j, err := r.Submit(fmt.Appendf(nil, "module: %s\ngpus: 1\ngpu: h100\nmax_price: 10\nduration: 10m\nbid_window: 1s\nstart_by: 2m\n", testModule))
	if err != nil {
		t.Fatal(err)
	}
	roomtest.Eventually(t, time.Minute, "the job to wait", func() bool {
		j, err = r.db.GetJob(j.ID)
		n, _ := kinds(j.Events, "waiting")
		return err == nil && n > 0
	})
	me.Clock.Advance(3 * time.Minute) // past start_by before the next try
	roomtest.Eventually(t, 2*time.Minute, "the job to end unfilled", func() bool {
		j, err = r.db.GetJob(j.ID)
		return err == nil && lease.JobState(j.State).Terminal()
	})
	if j.State != lease.JobUnfilled || !strings.Contains(j.Reason, "no plan in 2 auctions") || !strings.Contains(j.Reason, "its start_by 2m0s") {
		t.Fatalf("job %s: %q; want unfilled after 2 auctions, naming start_by", j.State, j.Reason)
	}
}

// TestWaitBackoff: a job that just missed is tried again soon, one that
// has waited long once a minute.
func TestWaitBackoff(t *testing.T) {
	for _, c := range []struct{ waited, want time.Duration }{
		{0, waitMinBackoff}, {4 * time.Second, waitMinBackoff}, {20 * time.Second, 5 * time.Second},
		{time.Hour, waitMaxBackoff},
	} {
		if got := waitBackoff(c.waited); got != c.want {
			t.Errorf("waitBackoff(%s) = %s, want %s", c.waited, got, c.want)
		}
	}
}

// TestJobEventsAreBounded: a job's stored events keep the first ones and
// the latest, with one marker counting what was dropped, however many
// come.
func TestJobEventsAreBounded(t *testing.T) {
	var evs []store.JobEvent
	for i := range 1000 {
		evs = keepJobEvents(append(evs, store.JobEvent{Kind: "x", Message: fmt.Sprint(i)}))
	}
	if len(evs) != maxJobEvents {
		t.Fatalf("%d events kept, want %d", len(evs), maxJobEvents)
	}
	if evs[0].Message != "0" || evs[jobEventsHead-1].Message != fmt.Sprint(jobEventsHead-1) || evs[len(evs)-1].Message != "999" {
		t.Fatalf("kept %q .. %q .. %q; want the first %d and the latest", evs[0].Message, evs[jobEventsHead-1].Message, evs[len(evs)-1].Message, jobEventsHead)
	}
	m := evs[jobEventsHead]
	kept := maxJobEvents - 1
	if m.Kind != "elided" || !strings.HasPrefix(m.Message, fmt.Sprintf("%d events not kept", 1000-kept)) {
		t.Fatalf("marker %+v; want %d events counted", m, 1000-kept)
	}
}

// TestReauctionWaits: work auctioned again after a preemption or a lost
// provider waits market.max_wait from then, and at least
// ReauctionMinWait with market.max_wait 0; a paced wait (a service
// slot's) is ended and spaced by its caller, never slept here.
func TestReauctionWaits(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct{ maxWait, want time.Duration }{
		{0, ReauctionMinWait}, {time.Hour, time.Hour},
	} {
		au := &auctioneer{auctioneerDeps: auctioneerDeps{now: func() time.Time { return now }}, maxWait: c.maxWait}
		if w := au.waitFor("job", nil, 1); w.deadline.Sub(now) != c.want || w.paced {
			t.Errorf("market.max_wait %s: a re-auction waits %s (paced %v), want %s", c.maxWait, w.deadline.Sub(now), w.paced, c.want)
		}
	}
	r, _, _ := newRenter(t, 0)
	w := newPacedWait(r.now(), "as long as the test runs")
	// With ctx already done, a wait that slept would report false.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if !r.auctioneer.wait(done, "no-such-job", "no bid", w) {
		t.Fatal("a paced wait ended, or slept: its caller spaces the tries")
	}
}

// TestSpecMaxWaitWins: a spec's max_wait replaces market.max_wait, 0s
// ending the job at its first auction; start_by wins over both.
func TestSpecMaxWaitWins(t *testing.T) {
	r, _, _ := newRenterWith(t, 0, func(c *Config) { c.MaxWait = time.Hour })
	now := r.now()
	for _, c := range []struct {
		extra string
		want  time.Duration // 0: no wait
	}{
		{"", time.Hour}, {"max_wait: 2h\n", 2 * time.Hour}, {"max_wait: 0s\n", 0},
		{"max_wait: 2h\nstart_by: 30m\n", 30 * time.Minute},
	} {
		spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: 1\nmax_price: 1\nduration: 1h\n%s", testModule, c.extra))
		if err != nil {
			t.Fatal(err)
		}
		w := r.auctioneer.waitFor("no-such-job", spec, 0)
		if got := w.deadline.Sub(now); !w.deadline.IsZero() && got != c.want || w.deadline.IsZero() && c.want != 0 {
			t.Errorf("%q: waits %s (deadline %v), want %s", c.extra, got, w.deadline, c.want)
		}
	}
	if _, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: 1\nmax_price: 1\nduration: 1h\nmax_wait: -1s\n", testModule)); err == nil || !strings.Contains(err.Error(), "max_wait") {
		t.Errorf("a negative max_wait: %v, want an error naming max_wait", err)
	}
}
