package main_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	apiclient "github.com/idlegrid/idlegrid/node/api/client"
)

// TestProvidersLeaveTheRenterView runs real daemons: a provider killed
// with -9 (provider.republish 2s, so its digests live 3 s;
// IDLEGRID_LEAVE_REPUBLISH sets another) leaves the
// renter's peer list and its `market search` when its last digest goes
// stale; restarted and then stopped with SIGINT, it withdraws its offer
// and is gone from the search within 10 s. The spare provider stays
// throughout, so the renter's view never empties (an empty view is
// searched in the DHT, where records outlive their providers). The times
// are logged for docs/benchmarks.md.
func TestProvidersLeaveTheRenterView(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	republish := "2s"
	if v := os.Getenv("IDLEGRID_LEAVE_REPUBLISH"); v != "" {
		republish = v // "10m", the default: its digests live 3 minutes
	}
	d := startTrustNetOn(t, true, "", "--set", "provider.republish="+republish)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	p := d.provider
	inSearch := func() (bool, string) {
		res, err := d.renter.client.Search(ctx, "", apiclient.SearchOptions{})
		if err != nil {
			return true, err.Error()
		}
		in := slices.ContainsFunc(res.Offers, func(o api.Offer) bool { return o.PeerID == p.peerID })
		return in, fmt.Sprintf("%d offers, the provider's among them: %v", len(res.Offers), in)
	}
	gone := func() (bool, string) { in, why := inSearch(); return !in, why }
	connected := func() (bool, string) {
		peers, err := d.renter.client.Peers(ctx)
		if err != nil {
			return true, err.Error()
		}
		in := slices.ContainsFunc(peers, func(e api.Peer) bool { return e.ID == p.peerID && e.Connected })
		return in, fmt.Sprintf("connected to the provider: %v", in)
	}

	// Steady state first: both providers backed in the renter's view, so
	// its search reads the digest book (right after start it walks the DHT).
	backed := func() (bool, string) {
		st, err := d.renter.client.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		return st.MarketView.Backed == 2, fmt.Sprintf("market view %+v", st.MarketView)
	}
	waitFor(t, ctx, "both providers backed in the renter's market view", d.all, backed)
	p.kill9(t)
	killed := time.Now()
	var peerGone, killGone time.Duration
	waitFor(t, ctx, "the killed provider to leave the renter's peer list and market search", d.all, func() (bool, string) {
		in, why := connected()
		if !in && peerGone == 0 {
			peerGone = time.Since(killed)
		}
		found, swhy := inSearch()
		if !found && killGone == 0 {
			killGone = time.Since(killed)
		}
		return peerGone > 0 && killGone > 0, why + "; " + swhy
	})
	if peerGone > 30*time.Second {
		t.Errorf("the killed provider left the peer list after %s, want within 30 s", peerGone)
	}

	p.start(t, d.bin)
	waitFor(t, ctx, "the restarted provider in the renter's market search", d.all, inSearch)
	waitFor(t, ctx, "both providers backed in the renter's market view", d.all, backed)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	waitFor(t, sctx, "the provider stopped with SIGINT to leave the renter's market search within 10 s", d.all, gone)
	stopGone := time.Since(stopped)
	_ = p.cmd.Wait()
	t.Logf("provider.republish %s; kill -9: out of the renter's peer list after %s, out of its market search after %s; SIGINT: out of the market search after %s",
		republish, peerGone.Round(100*time.Millisecond), killGone.Round(100*time.Millisecond), stopGone.Round(100*time.Millisecond))
}
