package nodetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// inSearch reports whether renter's market search (the empty query)
// lists provider p, and how many providers it lists.
func inSearch(ctx context.Context, renter *node.Node, p peer.ID) (found bool, offers int) {
	res, err := renter.Trust().Search(ctx, "", "", 0, false)
	if err != nil {
		return true, -1 // no answer is no evidence it left
	}
	for _, o := range res.Offers {
		if o.Capacity.Peer == p.String() {
			found = true
		}
	}
	return found, len(res.Offers)
}

// connected reports whether renter lists p among its connected peers.
func connected(renter *node.Node, p peer.ID) bool {
	for _, e := range renter.Trust().Peers() {
		if e.ID == p && e.Connected {
			return true
		}
	}
	return false
}

// TestStoppedProviderLeavesMarketView: a provider stopped cleanly
// withdraws its offer with a last signed digest, and it is gone from the
// renter's market search within 10 s (the other provider stays), and from
// its peer list.
func TestStoppedProviderLeavesMarketView(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}, nodetest.Options{})
	leaving := c.ByRole(node.RoleProvider)[0]
	id := leaving.Node.ID()
	start := time.Now()
	if err := c.Stop(leaving.Index); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := nodetest.WaitFor(ctx, "the stopped provider gone from market search", func() bool {
		found, n := inSearch(ctx, renter, id)
		return !found && n == 1
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped provider left the renter's market search %s after Stop began", time.Since(start).Round(time.Millisecond))
	if err := nodetest.WaitFor(ctx, "the stopped provider gone from the peer list", func() bool { return !connected(renter, id) }); err != nil {
		t.Fatal(err)
	}
}

// TestCutProviderLeavesWhenItsDigestGoesStale: a provider that vanishes
// without a word (its links cut, as in a crash) leaves the renter's peer
// list within 30 s and its market search once its last digest goes stale:
// with provider.republish 2s its digests live 3 s, long before the
// record's TTL. (The provider that stays keeps the default, so the view
// never empties and falls back to the DHT.)
func TestCutProviderLeavesWhenItsDigestGoesStale(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}, nodetest.Options{
		Configure: func(i int, cfg *node.Config) {
			if i == 1 {
				cfg.Provider.Republish = 2 * time.Second
			}
		},
	})
	gone := c.Members[1]
	id := gone.Node.ID()
	start := time.Now()
	if err := c.Cut(gone.Index); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := nodetest.WaitFor(ctx, "the cut provider gone from the peer list", func() bool { return !connected(renter, id) }); err != nil {
		t.Fatal(err)
	}
	var found bool
	var n int
	if err := nodetest.WaitFor(ctx, "the cut provider gone from market search", func() bool {
		found, n = inSearch(ctx, renter, id)
		return !found && n == 1
	}); err != nil {
		t.Fatalf("%v: found %v, %d offers, view %+v", err, found, n, renter.Trust().MarketView())
	}
	t.Logf("cut provider left the renter's market search %s after the cut (digest lifetime 3s)", time.Since(start).Round(time.Millisecond))
}
