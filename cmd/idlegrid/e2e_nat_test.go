//go:build linux

package main_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// TestNATTraversal runs the real binary behind NATs (natTopology): the
// NATed providers become reachable through the bootstrap peer's relay; the
// renter, behind a NAT of its own, finds provider A, which bids, is
// leased, runs a docker job whose 1 MiB result (far above the relay's 128
// KiB circuit limit) the renter downloads and verifies, and serves a
// service tunnel; hole punching upgrades the renter's connection to A to a
// direct one, and the data goes direct (the relay carried less than the
// result). Provider S, behind a NAT that cannot be hole-punched, is found
// in the market but stays relayed, and both its status and the renter's
// view of it say why; leases never go to it.
//
// The jobs are docker jobs: the engine's socket is reachable from a
// namespace. A service's container sits on the engine's bridge in the
// host's namespace, which a provider in a namespace cannot route to; the
// test wires the container into provider A's namespace with a veth
// (wireService), standing in for a host reaching its own containers.
func TestNATTraversal(t *testing.T) {
	needNetns(t)
	cli := needDocker(t)
	began := time.Now()
	n := startNATNet(t, cli, natExtra{})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	for _, p := range []*proc{n.provA, n.rent, n.provS} {
		st, after := n.waitReachable(t, ctx, p, "relayed")
		t.Logf("%s relayed %v after start (%s)", p.name, after.Round(100*time.Millisecond), st.Reachability.Detail)
	}
	if st, _ := n.waitReachable(t, ctx, n.boot, "public"); !strings.Contains(st.Reachability.Detail, "bootstrap") {
		t.Errorf("bootstrap reachability: %+v", st.Reachability)
	}
	waitFor(t, ctx, "the renter to find both providers", n.all, func() (bool, string) {
		var res api.SearchResult
		if err := n.json(n.rent, &res, "market", "search"); err != nil {
			return false, err.Error()
		}
		for _, p := range []*proc{n.provA, n.provS} {
			if !slices.ContainsFunc(res.Offers, func(o api.Offer) bool { return o.PeerID == p.peerID && o.FreeGPUs > 0 }) {
				return false, fmt.Sprintf("%d offers, none from %s", len(res.Offers), p.name)
			}
		}
		return true, ""
	})

	// A batch job whose result is far larger than a relay circuit carries,
	// leased on provider A (provider S never sees the RFQ: gossip never
	// runs over a limited relay).
	n.waitGossipPeers(t, ctx, 1)
	relayedBefore := n.relayedBytes(t, ctx)
	n.batchJob(t, ctx, n.provA)
	if path, err := n.peerPath(n.rent, n.provA); err != nil || path != "direct" {
		t.Errorf("renter's path to provider A: %q (%v), want direct (hole punched)", path, err)
	}
	if relayed := n.relayedBytes(t, ctx) - relayedBefore; relayed >= float64(natResultSize()) {
		t.Errorf("the relay carried %.0f bytes during the job: the result went through it", relayed)
	} else {
		t.Logf("the relay carried %.0f bytes during the job", relayed)
	}

	n.serviceTunnel(t, ctx, cli)

	// Provider S: found, relayed, and why there is no direct path.
	st, _ := n.waitReachable(t, ctx, n.provS, "relayed")
	waitFor(t, ctx, "provider S to say hole punching fails", n.all, func() (bool, string) {
		if err := n.json(n.provS, &st, "status"); err != nil {
			return false, err.Error()
		}
		return strings.Contains(st.Reachability.Detail, "hole punching failed"), st.Reachability.Detail
	})
	waitFor(t, ctx, "the renter to say why provider S is relayed", n.all, func() (bool, string) {
		path, err := n.peerPath(n.rent, n.provS)
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(path, "relayed through") && strings.Contains(path, "limited to 2m0s and 128 KiB") && strings.Contains(path, "hole punching failed"), path
	})
	t.Logf("provider S: %s", st.Reachability.Detail)
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

// TestNATRelayedLease is the topology of TestNATTraversal with two
// choices an operator can make. The relay runs without circuit limits
// (p2p.relay_circuit_duration and p2p.relay_circuit_kib 0): a relayed
// connection is then a full one, so provider S, which hole punching
// cannot reach, gets the renter's RFQs, bids (cheapest), is leased, and
// its result comes through the relay. Provider A's router forwards its
// port: AutoNAT finds it public and the renter dials it directly.
func TestNATRelayedLease(t *testing.T) {
	needNetns(t)
	cli := needDocker(t)
	began := time.Now()
	n := startNATNet(t, cli, natExtra{
		forwardA: true,
		boot:     []string{"--set", "p2p.relay_circuit_duration=0s", "--set", "p2p.relay_circuit_kib=0"},
		provS:    []string{"--set", "provider.floor_usd.silver=1.00"},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	st, after := n.waitReachable(t, ctx, n.provA, "public")
	t.Logf("provider-a public %v after start (%s)", after.Round(100*time.Millisecond), st.Reachability.Detail)
	for _, p := range []*proc{n.rent, n.provS} {
		_, after := n.waitReachable(t, ctx, p, "relayed")
		t.Logf("%s relayed %v after start", p.name, after.Round(100*time.Millisecond))
	}
	n.waitGossipPeers(t, ctx, 2)
	relayedBefore := n.relayedBytes(t, ctx)
	n.batchJob(t, ctx, n.provS)
	if relayed := n.relayedBytes(t, ctx) - relayedBefore; relayed < float64(natResultSize()) {
		t.Errorf("the relay carried %.0f bytes during the job, less than the result", relayed)
	} else {
		t.Logf("the relay carried %.0f bytes during the job", relayed)
	}
	path, err := n.peerPath(n.rent, n.provS)
	if err != nil || !strings.HasPrefix(path, "relayed through") || strings.Contains(path, "limited") {
		t.Errorf("renter's path to provider S: %q (%v), want relayed without limits", path, err)
	}
	if path, err := n.peerPath(n.rent, n.provA); err != nil || path != "direct" {
		t.Errorf("renter's path to the public provider A: %q (%v), want direct", path, err)
	}
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}
