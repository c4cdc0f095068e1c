package trust

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

func newTrust(t *testing.T, p *roomtest.Peer) *Trust {
	t.Helper()
	tr, err := New(Config{ReliabilityPrior: 0.8, Refresh: time.Second, SearchTimeout: 5 * time.Second, Heartbeat: time.Minute},
		Deps{Clock: p.Clock.Now, Key: p.Key, P2P: p.P2P, Store: p.Store})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// sealedDigest is a provider's signed digest of one free A10.
func sealedDigest(t *testing.T, key crypto.PrivKey, now time.Time, seq uint64) []byte {
	t.Helper()
	pid, _ := peer.IDFromPrivateKey(key)
	id := pid.String()
	c := &auction.Capacity{
		V: auction.CapacityVersion, Peer: id, Seq: 1, IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Region: auction.Region{Country: "de"}, Runtimes: []string{"wasm"}, Reachability: auction.ReachPublic,
		Host:   auction.Host{CPUCores: 8, RAMMiB: 32768, DiskGiB: 100},
		Policy: auction.Policy{Tiers: []auction.Tier{auction.TierBronze}}, Floor: auction.FloorPrice{Bronze: 1_000_000},
		GPUs:    []auction.GPU{{UUID: "GPU-" + id[len(id)-6:], Model: "a10", Name: "NVIDIA A10", VRAMMiB: 23028, ComputeCap: "8.6", Free: true}},
		Version: "test",
	}
	d, err := auction.NewDigest(auction.DigestInput{Capacity: c, Seq: seq, Now: now, TTL: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := auction.SealDigest(d, key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestDigestValidatorAndBook: a current digest signed by its gossip author
// on its shard's topic is accepted and kept; one on another shard, one
// re-published by someone else, and an older one are not.
func TestDigestValidatorAndBook(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	prov := peers[1]
	now := prov.Clock.Now()
	raw := sealedDigest(t, prov.Key, now, 2)
	a10 := auction.GPUShard("a10").DigestTopic()
	ctx := context.Background()
	if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, raw); v != p2p.Accept {
		t.Fatalf("honest digest: %v", v)
	}
	if v := tr.ValidateDigest(auction.GPUShard("h100").DigestTopic())(ctx, prov.ID, prov.ID, raw); v != p2p.Reject {
		t.Fatalf("digest on a shard its provider does not serve: %v, want reject", v)
	}
	if v := tr.ValidateDigest(a10)(ctx, peers[0].ID, peers[0].ID, raw); v != p2p.Reject {
		t.Fatalf("digest re-published by another peer: %v, want reject", v)
	}
	tr.OnDigest(raw)
	if got := len(tr.Digests(auction.GPUShard("a10"))); got != 1 {
		t.Fatalf("book holds %d digests of the shard, want 1", got)
	}
	if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, sealedDigest(t, prov.Key, now, 1)); v != p2p.Ignore {
		t.Fatalf("older digest: %v, want ignore", v)
	}
	offers, ok := tr.digestOffers()
	if !ok || len(offers) != 1 || offers[0].Capacity.FreeGPUs() != 1 {
		t.Fatalf("market view from digests: %d offers, ok %v", len(offers), ok)
	}
}

// TestDigestSyncPagesThroughABook: a node joining syncs a peer's whole
// book over several pages, and each digest is verified on the way in.
func TestDigestSyncPagesThroughABook(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	server, client := newTrust(t, peers[0]), newTrust(t, peers[1])
	peers[0].P2P.HandleRequests(DigestsProto, "test.digests", DigestsLimits, server.ServeDigests)
	now := peers[0].Clock.Now()
	const n = syncPage + 40 // two pages
	for range n {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		server.OnDigest(sealedDigest(t, sk, now, 1))
	}
	added, err := client.syncFrom(context.Background(), peers[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if added != n || len(client.Digests("")) != n {
		t.Fatalf("synced %d (book %d), want %d", added, len(client.Digests("")), n)
	}
	// Syncing again adds nothing.
	if added, err := client.syncFrom(context.Background(), peers[0].ID); err != nil || added != 0 {
		t.Fatalf("second sync added %d, %v", added, err)
	}
}
