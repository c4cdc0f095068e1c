package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/conformance"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/node/trust"
)

// TestNodesConform runs the conformance check against each role of a
// cluster: our own nodes must pass what we ask of other implementations.
func TestNodesConform(t *testing.T) {
	c := nodetest.New(t, 3, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	renter := c.ByRole(node.RoleRenter)[0].Node
	// Let the renter's book hold the provider's digest, so the sync
	// checks see a digest, not only an empty book.
	if err := nodetest.WaitSearchable(ctx, renter, 1); err != nil {
		t.Fatal(err)
	}
	h, err := c.AddPeer(ma.StringCast("/ip4/10.9.0.1/tcp/7401"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, m := range c.Members {
		t.Run(string(m.Role), func(t *testing.T) {
			report := conformance.Check(ctx, h, peer.AddrInfo{ID: m.Node.ID(), Addrs: []ma.Multiaddr{m.Addr}})
			for _, r := range report {
				t.Logf("%-15s ok=%v %s", r.Check, r.OK, r.Detail)
			}
			if report.Failed() || len(report) < 4 {
				t.Errorf("%s does not conform: %+v", m.Role, report)
			}
		})
	}
}

// TestCheckFindsDepartures: a peer whose digest sync answers a summary of
// the wrong shape, and whose identify lacks gossipsub, fails those checks.
func TestCheckFindsDepartures(t *testing.T) {
	c := nodetest.New(t, 1, nodetest.Options{})
	bad, err := c.AddPeer(ma.StringCast("/ip4/10.9.0.2/tcp/7401"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bad.SetStreamHandler(trust.DigestsProto, func(s network.Stream) {
		defer s.Close()
		if _, err := msgio.NewVarintReaderSize(s, 512).ReadMsg(); err != nil {
			_ = s.Reset()
			return
		}
		// {"v": 2, "sums": []}: no buckets.
		_ = msgio.NewVarintWriter(s).WriteMsg([]byte{0xa2, 0x61, 'v', 0x02, 0x64, 's', 'u', 'm', 's', 0x80})
	})
	h, err := c.AddPeer(ma.StringCast("/ip4/10.9.0.3/tcp/7401"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := c.Net.LinkPeers(h.ID(), bad.ID()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	report := conformance.Check(ctx, h, peer.AddrInfo{ID: bad.ID(), Addrs: bad.Addrs()})
	failed := map[string]bool{}
	for _, r := range report {
		t.Logf("%-15s ok=%v %s", r.Check, r.OK, r.Detail)
		if !r.OK {
			failed[r.Check] = true
		}
	}
	for _, want := range []string{"identify", "digest-summary"} {
		if !failed[want] {
			t.Errorf("check %s passed a peer that departs from the spec", want)
		}
	}
}

// TestCheckAddrOverTCP checks a node on a real TCP transport from a
// default libp2p host, as idlegrid protocol check does.
func TestCheckAddrOverTCP(t *testing.T) {
	c := nodetest.New(t, 3, nodetest.Options{Transport: "tcp"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	p := c.ByRole(node.RoleProvider)[0]
	addr := p.Addr.String() + "/p2p/" + p.Node.ID().String()
	report, err := conformance.CheckAddr(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range report {
		t.Logf("%-15s ok=%v %s", r.Check, r.OK, r.Detail)
	}
	if report.Failed() || len(report) != 5 {
		t.Errorf("a provider over TCP does not conform: %+v", report)
	}
	if _, err := conformance.CheckAddr(ctx, "/ip4/127.0.0.1/tcp/1"); err == nil {
		t.Error("an address without a peer ID was taken")
	}
}
