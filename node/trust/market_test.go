package trust

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// dhtPeer is one p2p node on mocknet with the capacity validator, as the
// node wires it.
func dhtPeer(t *testing.T, mn mocknet.Mocknet, i int, server bool) (*p2p.Node, crypto.PrivKey) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := mn.AddPeer(sk, ma.StringCast(fmt.Sprintf("/ip4/10.0.%d.1/tcp/7401", i)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := p2p.DefaultConfig()
	cfg.Identity = sk
	cfg.DHTServer = server
	cfg.DHTOptions = []dht.Option{dht.NamespacedValidator(auction.CapacityNamespace, auction.NewCapacityValidator(time.Now))}
	n, err := p2p.New(cfg, p2p.Deps{Host: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, sk
}

// capacityRecord is a valid signed record of one free GPU.
func capacityRecord(t *testing.T, sk crypto.PrivKey, id peer.ID) []byte {
	t.Helper()
	now := time.Now()
	c := &auction.Capacity{
		V: auction.CapacityVersion, Peer: id.String(), Seq: uint64(now.UnixMilli()),
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Host:         auction.Host{CPUCores: 8, RAMMiB: 32 << 10, DiskGiB: 100},
		Version:      "test",
		Region:       auction.Region{Country: "de"},
		Reachability: auction.ReachPrivate,
		Runtimes:     []string{auction.RuntimeWasm},
		Floor:        auction.FloorPrice{Bronze: 500_000},
		Policy:       auction.Policy{Tiers: []auction.Tier{auction.TierBronze}},
		GPUs: []auction.GPU{{UUID: "GPU-0", Model: "a10-24gb", Name: "NVIDIA A10", VRAMMiB: 23028,
			ComputeCap: "8.6", Free: true}},
	}
	raw, err := auction.SealCapacity(c, sk)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestSearchKeepsRecordsFoundBeforeASlowPeer: one DHT peer that never
// answers in time holds every DHT lookup open until the search deadline.
// The search must still show the providers and records the other peers
// returned; it used to throw them away with the deadline error and show
// no offers at all (the "0 offers of 28" flake on a loaded machine). The
// view it returns is marked incomplete, so the renter does not close a bid
// window early on a part of the market, and is whole again once the peer
// answers.
func TestSearchKeepsRecordsFoundBeforeASlowPeer(t *testing.T) {
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() })
	var servers []*p2p.Node
	var keys []crypto.PrivKey
	for i := range 4 {
		n, sk := dhtPeer(t, mn, i, true)
		servers, keys = append(servers, n), append(keys, sk)
	}
	renterP2P, renterKey := dhtPeer(t, mn, 4, false)
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	if err := mn.ConnectAllButSelf(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for _, n := range append(servers, renterP2P) {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// servers[0] and servers[1] are providers; servers[3] turns slow.
	providers := servers[:2]
	for i, p := range providers {
		if err := p.DHT().PutValue(ctx, auction.CapacityKey(p.ID()), capacityRecord(t, keys[i], p.ID())); err != nil {
			t.Fatalf("put record: %v", err)
		}
		if err := p.DHT().Provide(ctx, auction.CapabilityCID(auction.CapabilityProvider), true); err != nil {
			t.Fatalf("provide: %v", err)
		}
	}
	slow := servers[3].ID()
	for _, l := range mn.LinksBetweenPeers(renterP2P.ID(), slow) {
		l.SetOptions(mocknet.LinkOptions{Latency: time.Minute})
	}

	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tr, err := New(Config{ReliabilityPrior: 0.8, SearchTimeout: 3 * time.Second}, Deps{Key: renterKey, P2P: renterP2P, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Search(ctx, "gpus>=1", "", 0, true)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	if len(res.Offers) != len(providers) || res.Providers != len(providers) {
		t.Fatalf("search with a slow DHT peer: %d offers of %d providers found, want %d; problems %v, explain %+v",
			len(res.Offers), res.Providers, len(providers), res.Problems, res.Explain)
	}
	if !slices.Contains(res.Problems, ErrIncomplete.Error()) {
		t.Errorf("search cut short by its deadline does not say so: problems %v", res.Problems)
	}
	// The renter's view for closing a bid window early: the offers found,
	// marked incomplete, so it does not take them for every bidder.
	offers, err := tr.Offers(ctx)
	if !errors.Is(err, ErrIncomplete) || len(offers) != len(providers) {
		t.Errorf("offers with a slow DHT peer: %d offers, err %v; want %d and ErrIncomplete", len(offers), err, len(providers))
	}
	// One record on its own: the same rule.
	if _, err := tr.ProviderRecord(ctx, providers[0].ID()); err != nil {
		t.Fatalf("provider record with a slow DHT peer: %v", err)
	}

	// Once the peer answers again, lookups finish and the view is whole.
	for _, l := range mn.LinksBetweenPeers(renterP2P.ID(), slow) {
		l.SetOptions(mocknet.LinkOptions{})
	}
	// (Messages already on their way over the slow link still take their
	// time: wait for a lookup that does not meet them.)
	roomtest.Eventually(t, 2*time.Minute, "a whole view once every peer answers", func() bool {
		offers, err = tr.Offers(ctx)
		return err == nil && len(offers) == len(providers)
	})
}
