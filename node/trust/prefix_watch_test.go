package trust

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// TestPrefixMembersThatNeverBidGoSilent: a provider compares the
// always-bid prefix of its bid decisions with the RFQs' award summaries.
// Members the summary of their RFQ's own renter does not list as bidders
// miss, and after SilentAfter misses they leave its bid-selection view;
// a listed member answered and takes one miss off. A summary of another
// renter, a second summary of the same RFQ, a full list of bidders, a
// summary that came too late and a member this node never checked count
// nothing.
func TestPrefixMembersThatNeverBidGoSilent(t *testing.T) {
	peers := roomtest.Peers(t, 6)
	self, renter, honest, s1, s2, other := peers[0], peers[1], peers[2], peers[3], peers[4], peers[5]
	tr := newTrust(t, self)
	markBacked(tr, honest, s1, s2)
	unchecked := "12D3KooWunchecked"
	ctx := context.Background()
	prefix := []string{s1.ID.String(), s2.ID.String(), honest.ID.String(), unchecked, self.ID.String()}

	// summary seals a lease of honest's from r listing bidders, and notes
	// the prefix for its RFQ under noteRenter.
	summary := func(r *roomtest.Peer, noteRenter *roomtest.Peer, bidders []string) ([]byte, *auction.AwardSummary) {
		t.Helper()
		slices.Sort(bidders)
		raw, err := auctiontest.Summary(r.Key, honest.Key, auctiontest.Lease{Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1,
			PriceMicro: 1_000_000, At: self.Clock.Now(), Bidders: bidders})
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := auction.OpenAwardSummary(raw)
		if err != nil {
			t.Fatal(err)
		}
		tr.NotePrefix(sum.RFQ, noteRenter.ID.String(), prefix)
		return raw, sum
	}
	missed := func(p *roomtest.Peer) int { return tr.ev.of(p.ID.String()).Missed }
	silent := func(p *roomtest.Peer) bool { return tr.ev.of(p.ID.String()).Silent(self.Clock.Now()) }

	for i := range auction.SilentAfter {
		raw, _ := summary(renter, renter, []string{honest.ID.String()})
		tr.OnAttest(ctx, raw, nil)
		tr.OnAttest(ctx, raw, nil) // the same summary from another shard's topic
		if got := missed(s1); got != i+1 {
			t.Fatalf("after %d summaries s1 missed %d", i+1, got)
		}
	}
	if !silent(s1) || !silent(s2) || silent(honest) || missed(honest) != 0 {
		t.Fatalf("silent: s1 %v, s2 %v, honest %v (missed %d); want the two that never bid", silent(s1), silent(s2), silent(honest), missed(honest))
	}
	if got := testutil.ToFloat64(tr.prefixSilenced); got != 2 {
		t.Errorf("%v providers counted silenced, want 2", got)
	}
	if _, ok := tr.ev.by[unchecked]; ok {
		t.Error("an entry was made for a provider this node never checked")
	}

	// Another renter's summary of the RFQ says nothing about its prefix.
	raw, _ := summary(other, renter, nil)
	tr.OnAttest(ctx, raw, nil)
	// A full list of bidders may have left a member out.
	full := []string{s1.ID.String()}
	for len(full) < auction.MaxSummaryBidders {
		_, pub, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPublicKey(pub)
		full = append(full, id.String())
	}
	raw, _ = summary(renter, renter, full)
	tr.OnAttest(ctx, raw, nil)
	if missed(s2) != auction.SilentAfter || missed(s1) != auction.SilentAfter-1 {
		t.Fatalf("s1 missed %d, s2 %d; want an answer from s1 (listed) and nothing for s2 (a full list)", missed(s1), missed(s2))
	}
	if silent(s1) {
		t.Error("s1 answered and is still silent")
	}
	// A summary that comes after the prefix stopped waiting counts nothing.
	raw, _ = summary(renter, renter, []string{honest.ID.String()})
	self.Clock.Advance(prefixFor)
	tr.OnAttest(ctx, raw, nil)
	if missed(s1) != auction.SilentAfter-1 {
		t.Errorf("a late summary counted: s1 missed %d", missed(s1))
	}
	// A bid this node received clears every miss.
	tr.NoteBid("rfq", s2.ID.String())
	if missed(s2) != 0 {
		t.Errorf("s2 bid to this node and still missed %d", missed(s2))
	}
}

// TestPrefixWatchBounded: the prefixes waiting for summaries are bounded,
// the oldest going first, and expired ones are dropped as new ones come.
func TestPrefixWatchBounded(t *testing.T) {
	w := newPrefixWatch()
	now := time.Unix(1_000, 0)
	for i := range maxPrefixes + 10 {
		w.note(fmt.Sprint(i), "r", []string{"p"}, now.Add(prefixFor))
	}
	if len(w.by) != maxPrefixes || len(w.order) != maxPrefixes {
		t.Fatalf("%d prefixes held (%d in order), want %d", len(w.by), len(w.order), maxPrefixes)
	}
	if _, ok := w.take("0", "r", now); ok {
		t.Error("the oldest prefix was kept past the bound")
	}
	if _, ok := w.take(fmt.Sprint(maxPrefixes+9), "r", now); !ok {
		t.Error("the newest prefix was not kept")
	}
	w.note("late", "r", []string{"p"}, now.Add(2*prefixFor))
	if len(w.by) != 1 {
		t.Errorf("%d prefixes held after the others expired, want 1", len(w.by))
	}
}
