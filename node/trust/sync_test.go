package trust

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// backedDigests puts n digests of providers backed at tr into its book,
// with their records in recs.
func backedDigests(t *testing.T, tr *Trust, recs *records, n int) {
	t.Helper()
	now := tr.now()
	for range n {
		sk, _ := provider(t, recs, now)
		raw := sealedDigest(t, sk, now, 1)
		if _, err := tr.digests.Add(raw, now); err != nil {
			t.Fatal(err)
		}
		d, _, _ := auction.OpenDigest(raw)
		tr.ev.update(d.Peer, now, func(ev *peerEvidence) { ev.RecordUntil, ev.everBacked = now.Add(time.Hour), true })
	}
}

// countedServer serves tr's digests on p and counts the requests.
func countedServer(p *roomtest.Peer, tr *Trust) *atomic.Int64 {
	var n atomic.Int64
	p.P2P.HandleRequests(DigestsProto, "test.digests", DigestsLimits, func(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
		n.Add(1)
		return tr.ServeDigests(ctx, from, req)
	})
	return &n
}

// TestDigestSyncFetchesWhatItLacks: a joining node syncs a peer's backed
// providers, checks each record itself, and a later sync fetches only the
// buckets that changed.
func TestDigestSyncFetchesWhatItLacks(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	server, client := newTrust(t, peers[0]), newTrust(t, peers[1])
	recs := fakeRecords(client)
	requests := countedServer(peers[0], server)
	const n = 300
	backedDigests(t, server, recs, n)
	// Held digests the server has not checked are not passed on.
	sk, _ := provider(t, nil, server.now())
	if offer(t, server, peers[1].ID, sealedDigest(t, sk, server.now(), 1)) == 0 {
		t.Fatal("setup: a held digest was accepted")
	}
	ctx := context.Background()
	// The client's budget for one source holds newPeersPerSource unchecked
	// providers at a time: it syncs, checks, and syncs again.
	total := 0
	for range 2 * n / newPeersPerSource {
		added, err := client.syncFrom(ctx, peers[0].ID)
		if err != nil && !errors.Is(err, errSourceFull) {
			t.Fatal(err)
		}
		total += added
		drainChecks(t, client)
		if added == 0 {
			break
		}
	}
	if offers, held, _ := client.digestOffers(); total != n || len(offers) != n || held != 0 {
		t.Fatalf("synced %d, %d backed, %d held; want the server's %d backed providers", total, len(offers), held, n)
	}
	// Nothing changed: one summary request, no page.
	requests.Store(0)
	if added, err := client.syncFrom(ctx, peers[0].ID); err != nil || added != 0 || requests.Load() != 1 {
		t.Fatalf("second sync: %d added, %v, %d requests; want 0 and one summary", added, err, requests.Load())
	}
	// Three new providers: their buckets only.
	backedDigests(t, server, recs, 3)
	requests.Store(0)
	if added, err := client.syncFrom(ctx, peers[0].ID); err != nil || added != 3 || requests.Load() > 4 {
		t.Fatalf("sync of 3 new providers: %d added, %v, %d requests; want 3 in at most 4 requests", added, err, requests.Load())
	}
}

// TestDigestSyncSourceOfSybilsIsCutOff: a sync source that answers with
// endless pages of freshly signed keys puts no more than its budget into
// the book, is charged when their records do not back them, and is not
// synced from again; a source whose pages break the protocol is charged
// at once.
func TestDigestSyncSourceOfSybilsIsCutOff(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	client := newTrust(t, peers[2])
	fakeRecords(client)
	// Fresh keys, more than any budget, in sync order; each page signs the
	// next ones: to the client the source never runs out.
	var keys []crypto.PrivKey
	for range 4 * newPeersPerSource {
		sk, _ := newKey(t)
		keys = append(keys, sk)
	}
	idOf := func(sk crypto.PrivKey) string { id, _ := peer.IDFromPrivateKey(sk); return id.String() }
	slices.SortFunc(keys, func(a, b crypto.PrivKey) int {
		if auction.SyncBefore(idOf(a), idOf(b)) {
			return -1
		}
		return 1
	})
	sybilPage := func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		var r digestsRequest
		if err := syncDec.Unmarshal(req, &r); err != nil {
			return nil, err
		}
		if r.Sum {
			out := digestsSummary{V: syncVersion, Sums: make([]bucketSum, auction.DigestBuckets)}
			for i := range out.Sums {
				out.Sums[i] = bucketSum{Count: 1 << 20, Hash: uint64(time.Now().UnixNano())}
			}
			return syncEnc.Marshal(out)
		}
		page := digestsPage{V: syncVersion}
		for _, sk := range keys {
			if r.After != "" && !auction.SyncBefore(r.After, idOf(sk)) {
				continue
			}
			if page.Digests = append(page.Digests, sealedDigest(t, sk, client.now(), 1)); len(page.Digests) == 32 {
				break
			}
		}
		page.Next = lastPeer(t, page.Digests)
		return syncEnc.Marshal(page)
	}
	peers[0].P2P.HandleRequests(DigestsProto, "test.sybils", DigestsLimits, sybilPage)
	ctx := context.Background()
	added, err := client.syncFrom(ctx, peers[0].ID)
	if !errors.Is(err, errSourceFull) || added != newPeersPerSource {
		t.Fatalf("endless source: %d added, %v; want its budget %d and a stop", added, err, newPeersPerSource)
	}
	drainChecks(t, client)
	if client.digests.Len() != 0 {
		t.Fatalf("%d sybil digests left after their checks", client.digests.Len())
	}
	if pts := peers[2].P2P.Guard().Points(peers[0].ID); pts < syncCutoffPoints && !peers[2].P2P.Blocked(peers[0].ID) {
		t.Fatalf("the sybil source was charged %.1f points", pts)
	}
	for _, p := range client.syncPeers() {
		if p == peers[0].ID {
			t.Fatal("the sybil source is still synced from")
		}
	}

	// A page off the shard asked for.
	peers[1].P2P.HandleRequests(DigestsProto, "test.offshard", DigestsLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		var r digestsRequest
		if err := syncDec.Unmarshal(req, &r); err != nil {
			return nil, err
		}
		if r.Sum {
			out := digestsSummary{V: syncVersion, Sums: make([]bucketSum, auction.DigestBuckets)}
			out.Sums[3] = bucketSum{Count: 1, Hash: 1}
			return syncEnc.Marshal(out)
		}
		sk, _, _ := crypto.GenerateEd25519Key(nil)
		return syncEnc.Marshal(digestsPage{V: syncVersion, Digests: [][]byte{sealedDigest(t, sk, client.now(), 1)}})
	})
	before := peers[2].P2P.Guard().Points(peers[1].ID)
	if _, err := client.syncShard(ctx, peers[1].ID, auction.GPUShard("h100")); err == nil {
		t.Fatal("a page off the shard was taken")
	}
	if pts := peers[2].P2P.Guard().Points(peers[1].ID); pts-before < syncPagePoints-1 {
		t.Fatalf("a page off the shard cost its server %.1f points", pts-before)
	}
}

// TestDigestSyncRates: requests over a peer's rate are refused and
// charged.
func TestDigestSyncRates(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	server := newTrust(t, peers[0])
	countedServer(peers[0], server)
	req, _ := syncEnc.Marshal(digestsRequest{V: syncVersion, Sum: true})
	refused := 0
	for range syncPeerBurst + 10 {
		if _, err := peers[1].P2P.Request(context.Background(), peers[0].ID, DigestsProto, req, DigestsLimits); err != nil {
			refused++
		}
	}
	if refused != 10 {
		t.Fatalf("%d of %d requests refused, want the 10 over the burst", refused, syncPeerBurst+10)
	}
	if pts := peers[0].P2P.Guard().Points(peers[1].ID); pts < 9*syncRatePoints {
		t.Fatalf("requests over the rate cost %.1f points", pts)
	}
}

func lastPeer(t *testing.T, raws [][]byte) string {
	t.Helper()
	d, _, err := auction.OpenDigest(raws[len(raws)-1])
	if err != nil {
		t.Fatal(err)
	}
	return d.Peer
}

// TestDigestSyncRetakesADroppedDigest: a provider's own digest synced
// before its record reached the DHT is dropped after its checks; once
// its unbacked time is over, a later sync offers the same digest again
// and it is checked afresh, rather than being skipped as already taken
// until the provider's next digest (minutes at scale: one missing
// provider in a 40-node market view).
func TestDigestSyncRetakesADroppedDigest(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	server, client := newTrust(t, peers[0]), newTrust(t, peers[1])
	recs := fakeRecords(client)
	countedServer(peers[0], server)
	now := server.now()
	if v := offer(t, server, peers[1].ID, sealedDigest(t, peers[0].Key, now, 1)); v != 0 && server.digests.Len() != 1 {
		t.Fatalf("setup: the server's own digest: %v", v)
	}
	ctx := context.Background()
	if added, err := client.syncFrom(ctx, peers[0].ID); err != nil || added != 1 {
		t.Fatalf("first sync: %d added, %v", added, err)
	}
	drainChecks(t, client) // no record yet: every try fails
	if offers, held, _ := client.digestOffers(); len(offers) != 0 || held != 0 {
		t.Fatalf("%d backed, %d held; want the provider dropped", len(offers), held)
	}
	if pts := peers[1].P2P.Guard().Points(peers[0].ID); pts != 0 {
		t.Fatalf("a provider serving its own digest ahead of its record was charged %.1f points", pts)
	}
	recs.put(testCapacity(peers[0].Key, now))
	peers[1].Clock.Advance(2 * time.Minute) // past its unbacked time, within syncEvery
	if added, err := client.syncFrom(ctx, peers[0].ID); err != nil || added != 1 {
		t.Fatalf("sync after the unbacked time: %d added, %v; want the dropped digest taken again", added, err)
	}
	drainChecks(t, client)
	if offers, _, _ := client.digestOffers(); len(offers) != 1 {
		t.Fatalf("%d backed; want the provider backed once its record is found", len(offers))
	}
}

// TestDigestSyncDropsAnEarlierReleasesCPUShardDigest: a sync source of an
// earlier release serves, on the CPU shard, digests of providers that run
// wasm without a CPU share (its rule put them there). They are skipped,
// not held against the source, and the rest of the page is taken.
func TestDigestSyncDropsAnEarlierReleasesCPUShardDigest(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	client := newTrust(t, peers[1])
	recs := fakeRecords(client)
	now := client.now()
	sk, _ := provider(t, recs, now) // wasm and an A10, no CPU share
	former := sealedDigest(t, sk, now, 1)
	shareKey, _ := provider(t, nil, now)
	withShare := testCapacity(shareKey, now)
	withShare.CPU = &auction.CPUOffer{Cores: 2, RAMMiB: 4096, FreeCores: 2, FreeRAMMiB: 4096, FloorMicro: 20_000}
	recs.put(withShare)
	current := sealDigestOf(t, shareKey, withShare, now, 1)
	page := [][]byte{former, current}
	first := func(raw []byte) string { d, _, _ := auction.OpenDigest(raw); return d.Peer }
	if !auction.SyncBefore(first(former), first(current)) {
		page[0], page[1] = page[1], page[0]
	}
	var all auction.BucketSet
	for b := range auction.DigestBuckets {
		all.Add(b)
	}
	added, err := client.takePage(context.Background(), peers[0].ID, auction.ShardCPU, &all, "", digestsPage{V: syncVersion, Digests: page})
	if err != nil || added != 1 {
		t.Fatalf("a page of one current and one former CPU-shard digest: %d added, %v; want 1 and no error", added, err)
	}
	dockerKey, _ := provider(t, nil, now)
	docker := testCapacity(dockerKey, now)
	docker.Runtimes = []string{auction.RuntimeDocker}
	never := sealDigestOf(t, dockerKey, docker, now, 1)
	if _, err := client.takePage(context.Background(), peers[0].ID, auction.ShardCPU, &all, "", digestsPage{V: syncVersion, Digests: [][]byte{never}}); err == nil {
		t.Fatal("a digest never on the CPU shard, served there: no error")
	}
}
