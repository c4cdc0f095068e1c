package trust

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// sealSummary signs an A10 award summary of renter and provider at at.
func sealSummary(t testing.TB, renter, provider crypto.PrivKey, price uint64, at time.Time) []byte {
	t.Helper()
	raw, err := auctiontest.Summary(renter, provider, auctiontest.Lease{Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1, PriceMicro: price, At: at})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// storedSummaryIDs are the IDs of the summaries tr's store holds, sorted.
func storedSummaryIDs(t testing.TB, tr *Trust) []string {
	t.Helper()
	ids, err := tr.db.SummaryIDs()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// indexed is how many awards tr's price index counts.
func indexed(t testing.TB, tr *Trust) int {
	t.Helper()
	stats, err := tr.PriceIndex(time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range stats {
		n += s.Awards
	}
	return n
}

// TestSummaryOfAnUncheckedProviderIsNotKept: a summary whose provider this
// node never checked a record of weighs nothing in the price index and is
// free for any two keys to make. It is still passed on (it releases the
// losing bidders' holds), but not stored, and it makes no evidence entry
// for its provider or the bidders it names; it is counted. A summary of a
// checked provider is stored and indexed.
func TestSummaryOfAnUncheckedProviderIsNotKept(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	renter, checked := peers[1], peers[2]
	markBacked(tr, checked)
	now := peers[0].Clock.Now()
	for range 5 {
		r, _ := newKey(t)
		p, _ := newKey(t)
		if v := gossipSummary(t, tr, r, p, 1_000_000, now); v != p2p.Accept {
			t.Fatalf("a fresh pair's summary: %v, want accept (it is valid)", v)
		}
	}
	if ids := storedSummaryIDs(t, tr); len(ids) != 0 {
		t.Fatalf("stored %d summaries of unchecked providers", len(ids))
	}
	if n := testutil.ToFloat64(tr.summariesDropped.WithLabelValues(summaryDropUnbacked)); n != 5 {
		t.Fatalf("counted %v unbacked summaries, want 5", n)
	}
	tr.ev.mu.Lock()
	entries := len(tr.ev.by)
	tr.ev.mu.Unlock()
	if entries != 1 {
		t.Fatalf("%d evidence entries, want 1 (the checked provider's): unchecked parties made entries", entries)
	}
	raw := sealSummary(t, renter.Key, checked.Key, 1_000_000, now)
	if v := gossip(t, tr, renter, raw); v != p2p.Accept {
		t.Fatalf("the checked provider's summary: %v", v)
	}
	if got, want := storedSummaryIDs(t, tr), idsOf(raw); !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if n := indexed(t, tr); n != 1 {
		t.Fatalf("the index counts %d awards, want 1", n)
	}
	if ev := tr.ev.of(checked.ID.String()); ev.Won != 1 {
		t.Fatalf("the checked provider's wins: %d, want 1", ev.Won)
	}
}

// TestSummaryBookBounded: of one provider's summaries a node keeps the
// newest maxSummariesPerProvider, whatever order they come in, and
// maxSummaries in all, the oldest going first; summaries this node is a
// party to are kept outside both. What the book lets go leaves the store.
func TestSummaryBookBounded(t *testing.T) {
	peers := roomtest.Peers(t, 4)
	tr := newTrust(t, peers[0])
	self, renter, p1, p2 := peers[0], peers[1], peers[2], peers[3]
	markBacked(tr, p1, p2)
	tr.summaries.perProvider, tr.summaries.max = 3, 5
	now := peers[0].Clock.Now()
	at := func(i int) time.Time { return now.Add(-time.Duration(i) * time.Minute) }
	var p1s, p2s [][]byte
	for _, i := range []int{4, 1, 5, 2, 3} { // p1: minutes ago, out of order
		raw := sealSummary(t, renter.Key, p1.Key, 1_000_000, at(i))
		gossip(t, tr, renter, raw)
		p1s = append(p1s, raw)
	}
	// p1's newest three: 1, 2 and 3 minutes ago.
	if got, want := storedSummaryIDs(t, tr), idsOf(p1s[1], p1s[3], p1s[4]); !slices.Equal(got, want) {
		t.Fatalf("stored %q, want p1's newest three %q", got, want)
	}
	if n := testutil.ToFloat64(tr.summariesDropped.WithLabelValues(summaryDropProvider)); n != 2 {
		t.Fatalf("counted %v dropped for the provider bound, want 2", n)
	}
	for _, i := range []int{0, 6, 7} { // p2: one newer than all, two older
		raw := sealSummary(t, renter.Key, p2.Key, 2_000_000, at(i))
		gossip(t, tr, renter, raw)
		p2s = append(p2s, raw)
	}
	// Five in all: the oldest of the six (p2's at 7 minutes) went.
	want := idsOf(p1s[1], p1s[3], p1s[4], p2s[0], p2s[1])
	if got := storedSummaryIDs(t, tr); !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if n := testutil.ToFloat64(tr.summariesDropped.WithLabelValues(summaryDropFull)); n != 1 {
		t.Fatalf("counted %v dropped as full, want 1", n)
	}
	// The node's own awards (as renter) are kept beside the bound, even
	// the oldest.
	own := sealSummary(t, self.Key, p1.Key, 1_500_000, at(60))
	gossip(t, tr, self, own)
	if got := storedSummaryIDs(t, tr); !slices.Equal(got, idsOf(append([][]byte{own}, p1s[1], p1s[3], p1s[4], p2s[0], p2s[1])...)) {
		t.Fatalf("own summary not kept beside the bound: %q", got)
	}
	if n := indexed(t, tr); n != 6 {
		t.Fatalf("the index counts %d awards, want 6", n)
	}
	// A week on, the ones older than a week leave the index.
	peers[0].Clock.Advance(summaryRetention - 2*time.Minute + time.Second)
	if n := indexed(t, tr); n != 2 { // p2's newest (0) and p1's newest (1)
		t.Fatalf("a week on the index counts %d awards, want 2", n)
	}
}

// TestSummaryBookFollowsTheStore: a restarted node reads its stored
// summaries once, at its first reading of the index, enforcing the
// bounds on them (not the record rule: its evidence is memory only).
func TestSummaryBookFollowsTheStore(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	renter, prov := peers[1], peers[2]
	markBacked(tr, prov)
	now := peers[0].Clock.Now()
	var raws [][]byte
	for i := range 4 {
		raw := sealSummary(t, renter.Key, prov.Key, 1_000_000, now.Add(-time.Duration(i)*time.Minute))
		gossip(t, tr, renter, raw)
		raws = append(raws, raw)
	}
	if err := tr.db.PutSummary("not-a-summary", []byte("junk"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	again := newTrust(t, peers[0]) // the same store, no evidence
	again.summaries.perProvider = 3
	if n := indexed(t, again); n != 0 {
		t.Fatalf("before any record check the index counts %d awards, want 0", n)
	}
	if n := len(again.summaries.current(now)); n != 3 {
		t.Fatalf("after a restart the book holds %d summaries, want 3", n)
	}
	markBacked(again, prov)
	if n := indexed(t, again); n != 3 {
		t.Fatalf("with the provider checked again the index counts %d awards, want 3", n)
	}
	if got, want := storedSummaryIDs(t, again), append(idsOf(raws[:3]...), "not-a-summary"); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// TestSummaryBookMatchesPlainRules: over random summaries, the book holds
// exactly what the rules say done plainly (each provider's newest
// perProvider, then the newest max of those, own ones besides), and its
// heap is whole.
func TestSummaryBookMatchesPlainRules(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		b := newSummaryBook("self", func(string) {})
		b.perProvider = rapid.IntRange(1, 6).Draw(rt, "perProvider")
		b.max = rapid.IntRange(1, 12).Draw(rt, "max")
		var all []*heldSummary
		n := rapid.IntRange(1, 120).Draw(rt, "n")
		for i := range n {
			s := auction.AwardSummary{
				Provider: rapid.SampledFrom([]string{"p1", "p2", "p3", "self"}).Draw(rt, "provider"),
				Renter:   rapid.SampledFrom([]string{"r1", "r2", "self"}).Draw(rt, "renter"),
				AtMs:     t0.Add(time.Duration(rapid.IntRange(0, 50).Draw(rt, "at")) * time.Minute).UnixMilli(),
			}
			id := fmt.Sprint("id-", i)
			b.admit(id, &s)
			all = append(all, &heldSummary{id: id, s: s, own: s.Provider == "self" || s.Renter == "self"})
			// The plain rules.
			want := map[string]bool{}
			var others []*heldSummary
			byProvider := map[string][]*heldSummary{}
			for _, h := range all {
				if h.own {
					want[h.id] = true
				} else {
					byProvider[h.s.Provider] = append(byProvider[h.s.Provider], h)
				}
			}
			for _, hs := range byProvider {
				slices.SortFunc(hs, olderFirst)
				others = append(others, hs[max(0, len(hs)-b.perProvider):]...)
			}
			slices.SortFunc(others, olderFirst)
			for _, h := range others[max(0, len(others)-b.max):] {
				want[h.id] = true
			}
			if len(b.byID) != len(want) {
				rt.Fatalf("after %d: the book holds %d summaries, the rules %d", i, len(b.byID), len(want))
			}
			for id := range want {
				if _, ok := b.byID[id]; !ok {
					rt.Fatalf("after %d: the rules keep %s, the book does not", i, id)
				}
			}
			for j, h := range b.old.items {
				if h.at != j {
					rt.Fatalf("heap item %d thinks it is at %d", j, h.at)
				}
			}
		}
	})
}
