package trust

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

func newTrust(t testing.TB, p *roomtest.Peer) *Trust {
	t.Helper()
	tr, err := New(Config{ReliabilityPrior: 0.8, Refresh: time.Second, SearchTimeout: 5 * time.Second, BeatEvery: time.Minute},
		Deps{Clock: p.Clock.Now, Key: p.Key, P2P: p.P2P, Store: p.Store})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// records is a fake DHT of capacity records for trust's record checks.
type records struct {
	mu sync.Mutex
	by map[peer.ID]*auction.Capacity
}

// fakeRecords makes tr fetch records from a fake DHT the test fills.
func fakeRecords(tr *Trust) *records {
	r := &records{by: map[peer.ID]*auction.Capacity{}}
	tr.fetchRecord = func(_ context.Context, p peer.ID) (*auction.Capacity, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if c, ok := r.by[p]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("%w for %s", ErrNotFound, p)
	}
	return r
}

func (r *records) put(c *auction.Capacity) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, _ := peer.Decode(c.Peer)
	r.by[id] = c
}

// drainChecks runs the queued record checks; a retried check is run again
// at once (no waiting for its timer).
func drainChecks(t testing.TB, tr *Trust) {
	t.Helper()
	for {
		select {
		case p := <-tr.checks:
			tr.checkRecord(context.Background(), p)
			tr.ev.update(p, tr.now(), func(ev *peerEvidence) {
				if ev.tries > 0 && !ev.checking {
					ev.checking = true
					tr.checks <- p
				}
			})
		default:
			return
		}
	}
}

// testCapacity is a provider's record of one free A10.
func testCapacity(key crypto.PrivKey, now time.Time) *auction.Capacity {
	pid, _ := peer.IDFromPrivateKey(key)
	id := pid.String()
	return &auction.Capacity{
		V: auction.CapacityVersion, Peer: id, Seq: 1, IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Region: auction.Region{Country: "de"}, Runtimes: []string{"wasm"}, Reachability: auction.ReachPublic,
		Host:   auction.Host{CPUCores: 8, RAMMiB: 32768, DiskGiB: 100},
		Policy: auction.Policy{Tiers: []auction.Tier{auction.TierBronze}}, Floor: auction.FloorPrice{Bronze: 1_000_000},
		GPUs:    []auction.GPU{{UUID: "GPU-" + id[len(id)-6:], Model: "a10", Name: "NVIDIA A10", VRAMMiB: 23028, ComputeCap: "8.6", Free: true}},
		Version: "test",
	}
}

// sealedDigest is a provider's signed digest of one free A10.
func sealedDigest(t testing.TB, key crypto.PrivKey, now time.Time, seq uint64) []byte {
	t.Helper()
	return sealDigestOf(t, key, testCapacity(key, now), now, seq)
}

func sealDigestOf(t testing.TB, key crypto.PrivKey, c *auction.Capacity, now time.Time, seq uint64) []byte {
	t.Helper()
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

// offer hands a digest to tr as if src gossiped it on its first shard.
func offer(t testing.TB, tr *Trust, src peer.ID, raw []byte) p2p.Verdict {
	t.Helper()
	d, signer, err := auction.OpenDigest(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tr.ValidateDigest(d.Shards()[0].DigestTopic())(context.Background(), src, signer, raw)
}

// provider is a fresh provider key and its record in the fake DHT.
func provider(t testing.TB, recs *records, now time.Time) (crypto.PrivKey, peer.ID) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(sk)
	if recs != nil {
		recs.put(testCapacity(sk, now))
	}
	return sk, id
}

// TestDigestValidatorAndBook: a current digest signed by its gossip author
// on its shard's topic is held (withheld, not passed on) until its record
// backs it, then accepted; one on another shard, one re-published by
// someone else, and an older one are not (and only an older one issued
// well before the held one is charged).
func TestDigestValidatorAndBook(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	prov := peers[1]
	now := prov.Clock.Now()
	recs.put(testCapacity(prov.Key, now))
	raw := sealedDigest(t, prov.Key, now, 2)
	a10 := auction.GPUShard("a10").DigestTopic()
	ctx := context.Background()
	if v := tr.ValidateDigest(auction.GPUShard("h100").DigestTopic())(ctx, prov.ID, prov.ID, raw); v != p2p.Reject {
		t.Fatalf("digest on a shard its provider does not serve: %v, want reject", v)
	}
	if v := tr.ValidateDigest(auction.ShardCPU.DigestTopic())(ctx, prov.ID, prov.ID, raw); v != p2p.Ignore {
		t.Fatalf("digest of a wasm provider without a CPU share on the CPU shard, as an earlier release sends it: %v, want ignore", v)
	}
	if v := tr.ValidateDigest(a10)(ctx, peers[0].ID, peers[0].ID, raw); v != p2p.Reject {
		t.Fatalf("digest re-published by another peer: %v, want reject", v)
	}
	if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, raw); v != p2p.Withhold {
		t.Fatalf("an unchecked provider's digest: %v, want withhold", v)
	}
	if _, _, ok := tr.digestOffers(); ok {
		t.Fatal("a held digest shows in the market view")
	}
	drainChecks(t, tr)
	if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, raw); v != p2p.Accept {
		t.Fatalf("a backed provider's digest: %v, want accept", v)
	}
	offers, held, ok := tr.digestOffers()
	if !ok || held != 0 || len(offers) != 1 || offers[0].Capacity.FreeGPUs() != 1 {
		t.Fatalf("market view from digests: %d offers, %d held, ok %v", len(offers), held, ok)
	}
	// An older digest published with the held one crossed it in flight:
	// the relay is honest and goes uncharged, however many. One published
	// long before the held one came from a relay far behind, or is a
	// replay: a peer may pass on lateDigestsBurst of those uncharged.
	for range 2 * lateDigestsBurst {
		if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, sealedDigest(t, prov.Key, now.Add(-auction.DigestCrossing), 1)); v != p2p.Withhold {
			t.Fatalf("older digest issued %s before the held one: %v, want withhold", auction.DigestCrossing, v)
		}
	}
	late := sealedDigest(t, prov.Key, now.Add(-auction.DigestCrossing-time.Millisecond), 1)
	for i := range lateDigestsBurst {
		if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, late); v != p2p.Withhold {
			t.Fatalf("late digest %d of a peer's allowance of %d: %v, want withhold", i+1, lateDigestsBurst, v)
		}
	}
	if v := tr.ValidateDigest(a10)(ctx, prov.ID, prov.ID, late); v != p2p.Ignore {
		t.Fatalf("older digest issued more than %s before the held one, past the peer's allowance: %v, want ignore", auction.DigestCrossing, v)
	}
	_, relay := provider(t, nil, now)
	if v := tr.ValidateDigest(a10)(ctx, relay, prov.ID, late); v != p2p.Withhold {
		t.Fatalf("the same from another peer, within its own allowance: %v, want withhold", v)
	}
	// Backed is not proven: the bid-selection view waits for a bid.
	if got := len(tr.Digests(auction.GPUShard("a10"))); got != 0 {
		t.Fatalf("bid-selection view holds %d digests of a provider never seen to bid", got)
	}
	tr.NoteBid("rfq", prov.ID.String())
	if got := len(tr.Digests(auction.GPUShard("a10"))); got != 1 {
		t.Fatalf("bid-selection view holds %d digests after a bid, want 1", got)
	}
}

// TestUnbackedDigestsAreDroppedAndCharged: fresh keys whose records are
// not in the DHT, passed on by one peer, are held only up to that peer's
// budget, never shown, dropped once checked, and charged to the peer,
// which ends banned; a digest whose provider's record lists other GPUs is
// dropped too.
func TestUnbackedDigestsAreDroppedAndCharged(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	forwarder := peers[1].ID
	now := peers[0].Clock.Now()
	held, ignored := 0, 0
	for range 200 {
		sk, _ := provider(t, nil, now)
		switch v := offer(t, tr, forwarder, sealedDigest(t, sk, now, 1)); v {
		case p2p.Withhold:
			held++
		case p2p.Ignore:
			ignored++
		default:
			t.Fatalf("a stranger's digest: %v", v)
		}
	}
	if held != newPeersPerSource || ignored != 200-newPeersPerSource {
		t.Fatalf("one forwarder's 200 fresh providers: %d held, %d ignored; want its budget %d held", held, ignored, newPeersPerSource)
	}
	if res, err := tr.Search(context.Background(), "", "", 0, false); err == nil && len(res.Offers) > 0 {
		t.Fatalf("held digests in search: %d offers", len(res.Offers))
	}
	drainChecks(t, tr)
	if n := tr.digests.Len(); n != 0 {
		t.Fatalf("%d unbacked digests left in the book", n)
	}
	if !peers[0].P2P.Blocked(forwarder) {
		t.Fatalf("the forwarder of %d unbacked digests is not banned (%.0f points)", held, peers[0].P2P.Guard().Points(forwarder))
	}

	// A real provider whose digest claims a family its record lacks.
	sk, id := provider(t, recs, now)
	c := testCapacity(sk, now)
	c.GPUs = append(c.GPUs, auction.GPU{UUID: "GPU-fake", Model: "zz-fake-8gb", VRAMMiB: 8192, ComputeCap: "9.0", Free: true})
	if v := offer(t, tr, id, sealDigestOf(t, sk, c, now, 1)); v != p2p.Withhold {
		t.Fatalf("a digest with a made-up family: %v", v)
	}
	drainChecks(t, tr)
	if _, _, ok := tr.digests.Get(id.String()); ok {
		t.Fatal("a digest claiming GPUs its record lacks was kept")
	}
	if v := offer(t, tr, id, sealDigestOf(t, sk, c, now, 2)); v != p2p.Withhold {
		t.Fatalf("the same provider again within the unbacked time: %v, want withhold (dropped)", v)
	}
	if tr.digests.Len() != 0 {
		t.Fatal("a provider known unbacked was taken again")
	}
}

// TestPassedOnDigestOutrunningItsRecord: a digest an honest peer passed on
// may arrive before the provider's record reaches the DHT peers this node
// asks. It is checked once more before anyone is charged; when the record
// turns up the provider is backed and the peer is not charged.
func TestPassedOnDigestOutrunningItsRecord(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	relay := peers[1].ID
	now := peers[0].Clock.Now()
	sk, id := provider(t, nil, now)
	if v := offer(t, tr, relay, sealedDigest(t, sk, now, 1)); v != p2p.Withhold {
		t.Fatalf("a passed-on digest of an unchecked provider: %v, want withhold", v)
	}
	tr.checkRecord(context.Background(), <-tr.checks) // the record is not there yet
	if ev := tr.ev.of(id.String()); !ev.held || ev.tries != 1 {
		t.Fatalf("after a first check that found no record: held %v, tries %d; want held and checked again", ev.held, ev.tries)
	}
	recs.put(testCapacity(sk, now))
	tr.queueCheck(id.String()) // what the retry timer does
	drainChecks(t, tr)
	if offers, held, _ := tr.digestOffers(); len(offers) != 1 || held != 0 {
		t.Fatalf("%d backed, %d held; want the provider backed once its record is found", len(offers), held)
	}
	if pts := peers[0].P2P.Guard().Points(relay); pts != 0 {
		t.Fatalf("the peer that passed on a real provider's digest was charged %.1f points", pts)
	}
}

// TestDigestCheckWaitsForRoutes: a node that has just started has no DHT
// peers, and every lookup would come back "not found" without asking
// anyone. A digest an honest peer passed on (or served) meanwhile is no
// evidence against anyone: its check waits for the routing table, then
// backs the provider, and the peer is not charged.
func TestDigestCheckWaitsForRoutes(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	noRoutes := true
	lookup := tr.fetchRecord
	tr.fetchRecord = func(ctx context.Context, p peer.ID) (*auction.Capacity, error) {
		if noRoutes {
			return nil, fmt.Errorf("capacity record of %s: %w", p, errNoRoutes)
		}
		return lookup(ctx, p)
	}
	relay := peers[1].ID
	now := peers[0].Clock.Now()
	sk, id := provider(t, recs, now)
	if v := offer(t, tr, relay, sealedDigest(t, sk, now, 1)); v != p2p.Withhold {
		t.Fatalf("a passed-on digest of an unchecked provider: %v, want withhold", v)
	}
	for range 5 { // whatever the tries, none counts while there are no routes
		tr.checkRecord(context.Background(), id.String())
	}
	if ev := tr.ev.of(id.String()); !ev.held || ev.tries != 0 {
		t.Fatalf("after checks with no DHT peers: held %v, tries %d; want still held, no try spent", ev.held, ev.tries)
	}
	noRoutes = false
	tr.queueCheck(id.String()) // what the timer does
	drainChecks(t, tr)
	if offers, held, _ := tr.digestOffers(); len(offers) != 1 || held != 0 {
		t.Fatalf("%d backed, %d held; want the provider backed once this node has routes", len(offers), held)
	}
	if pts := peers[0].P2P.Guard().Points(relay); pts != 0 {
		t.Fatalf("the peer that passed on a real provider's digest was charged %.1f points", pts)
	}
}

// TestBudgetGivenBackWhenBacked: a source of real providers is never cut
// off: each provider its record backs gives the source's token back.
func TestBudgetGivenBackWhenBacked(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	now := peers[0].Clock.Now()
	for i := range 3 * newPeersPerSource {
		sk, _ := provider(t, recs, now)
		if v := offer(t, tr, peers[1].ID, sealedDigest(t, sk, now, 1)); v != p2p.Withhold {
			t.Fatalf("real provider %d: %v", i, v)
		}
		if i%16 == 15 {
			drainChecks(t, tr)
		}
	}
	drainChecks(t, tr)
	if offers, held, _ := tr.digestOffers(); len(offers) != 3*newPeersPerSource || held != 0 {
		t.Fatalf("%d providers backed, %d held; want %d backed", len(offers), held, 3*newPeersPerSource)
	}
	if pts := peers[0].P2P.Guard().Points(peers[1].ID); pts != 0 {
		t.Fatalf("a source of real providers was charged %.1f points", pts)
	}
}

// TestExpectedBiddersAndSilence: the renter expects the proven providers
// the rule selects and the backed newcomers that select themselves; one
// that misses SilentAfter auctions drops out of the expected set.
func TestExpectedBiddersAndSilence(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	clock := peers[0].Clock
	now := clock.Now()
	var ids []string
	for range 3 {
		sk, id := provider(t, recs, now)
		offer(t, tr, id, sealedDigest(t, sk, now, 1))
		ids = append(ids, id.String())
	}
	drainChecks(t, tr)
	clock.Advance(settleFor)
	r := &auction.RFQ{
		Resources: auction.Resources{GPUs: 1}, Runtime: "wasm", Tier: auction.TierBronze, MaxPriceMicro: 5_000_000,
		ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: 16, BidWindowMs: 1000,
	}
	shards := []auction.Shard{auction.GPUShard("a10")}
	window := time.Duration(r.BidWindowMs)*time.Millisecond + expectGrace
	for i := range auction.SilentAfter {
		rfq := fmt.Sprint("rfq-", i)
		got := tr.ExpectedBidders(r, rfq, auction.ShardRFQTopics(shards))
		if len(got) != 3 {
			t.Fatalf("auction %d: expected %v, want all three (backed newcomers, then proven)", i, got)
		}
		tr.NoteBid(rfq, ids[0])
		tr.NoteBid(rfq, ids[1])
		clock.Advance(window)
		tr.settleExpectations()
	}
	got := tr.ExpectedBidders(r, "rfq-last", auction.ShardRFQTopics(shards))
	if got[ids[2]] || !got[ids[0]] || !got[ids[1]] {
		t.Fatalf("after %d missed auctions: expected %v; want the two that bid", auction.SilentAfter, got)
	}
	if ev := tr.ev.of(ids[2]); !ev.Silent(clock.Now()) {
		t.Fatalf("the provider that never bid is not silent: %+v", ev.ProviderEvidence)
	}
	if v := tr.MarketView(); v.Silent != 1 || v.Backed != 3 || v.Proven != 2 {
		t.Errorf("market view %+v, want 3 backed, the 2 that bid proven, 1 silent", v)
	}
	// Silence is forgiven after SilentFor.
	clock.Advance(auction.SilentFor)
	if v := tr.MarketView(); v.Silent != 0 {
		t.Errorf("market view %+v after SilentFor, want none silent", v)
	}
	if got := tr.ExpectedBidders(r, "rfq-later", auction.ShardRFQTopics(shards)); !got[ids[2]] {
		t.Fatalf("silence not forgiven after %s: %v", auction.SilentFor, got)
	}
}

// TestExpectedBiddersLeaveOutClosingHosts: a provider whose digest says
// its calendar closes before the renter's notice would run out would
// refuse the quote, so the renter does not expect it; it does for a job
// whose notice fits.
func TestExpectedBiddersLeaveOutClosingHosts(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	clock := peers[0].Clock
	now := clock.Now()
	// Provider 0 is open from midnight until 30 minutes from now (until
	// midnight, just before it).
	midnight := now.UTC().Truncate(24 * time.Hour)
	closes := now.UTC().Add(30 * time.Minute).Truncate(time.Minute)
	if next := midnight.Add(24 * time.Hour); closes.After(next) {
		closes = next
	}
	var ids []string
	for i := range 3 {
		sk, id := provider(t, recs, now)
		c := testCapacity(sk, now)
		if i == 0 {
			end := uint16(closes.Sub(midnight) / time.Minute)
			c.Calendar = []auction.Window{{Day: now.UTC().Weekday(), StartMin: 0, EndMin: end, FactorPermille: 1000}}
		}
		offer(t, tr, id, sealDigestOf(t, sk, c, now, 1))
		ids = append(ids, id.String())
	}
	drainChecks(t, tr)
	clock.Advance(settleFor)
	r := &auction.RFQ{
		Resources: auction.Resources{GPUs: 1}, Runtime: "wasm", Tier: auction.TierBronze, MaxPriceMicro: 5_000_000,
		ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: 16, BidWindowMs: 1000, MinNoticeSec: 3600,
	}
	shards := []auction.Shard{auction.GPUShard("a10")}
	if got := tr.ExpectedBidders(r, "rfq-long-notice", auction.ShardRFQTopics(shards)); got[ids[0]] || !got[ids[1]] || !got[ids[2]] {
		t.Fatalf("an hour's notice: expected %v; want the two open hosts, not %s", got, ids[0])
	}
	r.MinNoticeSec = 60
	if got := tr.ExpectedBidders(r, "rfq-short-notice", auction.ShardRFQTopics(shards)); !got[ids[0]] && closes.Sub(clock.Now()) > 2*time.Minute {
		t.Fatalf("a minute's notice: expected %v; want %s too", got, ids[0])
	}
}

// TestShardsForIgnoresUnbackedFamilies: digests held unchecked, however
// cheap, route no RFQ; backed ones do.
func TestShardsForIgnoresUnbackedFamilies(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	now := peers[0].Clock.Now()
	for i := range 10 {
		sk, _ := provider(t, nil, now)
		c := testCapacity(sk, now)
		c.GPUs[0].Model = fmt.Sprintf("zz-fake%d-8gb", i)
		c.Floor.Bronze = 1_000
		offer(t, tr, peers[1].ID, sealDigestOf(t, sk, c, now, 1))
	}
	r := &auction.RFQ{
		Resources: auction.Resources{GPUs: 1}, Runtime: "wasm", Tier: auction.TierBronze, MaxPriceMicro: 5_000_000,
		ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: 16,
	}
	if got := tr.ShardsFor(r); len(got) != 0 {
		t.Fatalf("held fake families route the RFQ: %v", got)
	}
	sk, id := provider(t, recs, now)
	offer(t, tr, id, sealedDigest(t, sk, now, 1))
	drainChecks(t, tr)
	if got := tr.ShardsFor(r); len(got) != 1 || got[0] != auction.GPUShard("a10") {
		t.Fatalf("shards %v, want the backed provider's a10", got)
	}
}

// TestSearchIsBounded: a search returns at most MaxSearchOffers offers,
// and says how many more matched.
func TestSearchIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("seals over a thousand digests")
	}
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	now := peers[0].Clock.Now()
	n := MaxSearchOffers + 20
	for range n {
		sk, _ := provider(t, nil, now)
		raw := sealedDigest(t, sk, now, 1)
		if _, err := tr.digests.Add(raw, now); err != nil {
			t.Fatal(err)
		}
		d, _, _ := auction.OpenDigest(raw)
		tr.ev.update(d.Peer, now, func(ev *peerEvidence) { ev.RecordUntil = now.Add(time.Hour) })
	}
	res, err := tr.Search(context.Background(), "", "", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Offers) != MaxSearchOffers || len(res.Problems) != 1 {
		t.Fatalf("%d offers, problems %v; want %d and a note of the rest", len(res.Offers), res.Problems, MaxSearchOffers)
	}
	if res, err = tr.Search(context.Background(), "", "", 5, false); err != nil || len(res.Offers) != 5 {
		t.Fatalf("limit 5: %d offers, %v", len(res.Offers), err)
	}
}

// TestBlockedProvidersDigestsAreDropped: once a provider is blocked here
// (a fraud proof, a ban) its digest leaves the book, and one passed on
// by a peer that has not heard is withheld, uncharged, not kept: a cheat
// no longer stands in the market view or the always-bid prefix.
func TestBlockedProvidersDigestsAreDropped(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	recs := fakeRecords(tr)
	prov, relay := peers[1], peers[2]
	now := prov.Clock.Now()
	recs.put(testCapacity(prov.Key, now))
	topic := auction.GPUShard("a10").DigestTopic()
	ctx := context.Background()
	tr.ValidateDigest(topic)(ctx, prov.ID, prov.ID, sealedDigest(t, prov.Key, now, 2))
	drainChecks(t, tr)
	if _, _, ok := tr.digests.Get(prov.ID.String()); !ok {
		t.Fatal("the provider's digest is not in the book")
	}
	// A proof of its cheating takes it out of the book at once.
	_, proof := equivocationOf(t, relay, prov.Key, now)
	tr.ApplyFraud(proof)
	if _, _, ok := tr.digests.Get(prov.ID.String()); ok || !tr.p2p.Blocked(prov.ID) {
		t.Fatalf("after the fraud proof: in the book %v, blocked %v; want out and blocked", ok, tr.p2p.Blocked(prov.ID))
	}
	if v := tr.ValidateDigest(topic)(ctx, relay.ID, "", sealedDigest(t, prov.Key, now, 3)); v != p2p.Withhold {
		t.Errorf("a blocked provider's digest passed on by another peer: %v, want withheld", v)
	}
	if _, _, ok := tr.digests.Get(prov.ID.String()); ok {
		t.Error("a blocked provider's digest is still in the book")
	}
}

// TestTimedOutCheckChargesNobody: a passed-on digest whose record lookup
// runs out of time (a saturated node, or DHT peers that stall) is dropped
// like an unbacked one, but the peer that passed it on is not charged:
// the timeout shows nothing about it. Its budget token is not given back.
func TestTimedOutCheckChargesNobody(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	tr.checkTimeout = 20 * time.Millisecond
	tr.fetchRecord = func(ctx context.Context, p peer.ID) (*auction.Capacity, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("%w for %s: %v", ErrNotFound, p, ctx.Err())
	}
	relay := peers[1].ID
	now := peers[0].Clock.Now()
	sk, id := provider(t, nil, now)
	if v := offer(t, tr, relay, sealedDigest(t, sk, now, 1)); v != p2p.Withhold {
		t.Fatalf("a passed-on digest of an unchecked provider: %v, want withhold", v)
	}
	drainChecks(t, tr)
	if _, _, ok := tr.digests.Get(id.String()); ok {
		t.Fatal("a digest whose record was never found was kept")
	}
	if pts := peers[0].P2P.Guard().Points(relay); pts != 0 {
		t.Errorf("the relay was charged %.0f points for a lookup that timed out", pts)
	}
	if n := testutil.ToFloat64(tr.recordChecks.WithLabelValues("timed_out")); n != passedOnTries {
		t.Errorf("%v checks counted timed out, want %d", n, passedOnTries)
	}
	if v := offer(t, tr, relay, sealedDigest(t, sk, now, 2)); v != p2p.Withhold || tr.digests.Len() != 0 {
		t.Fatalf("the provider again within the unbacked time: %v, %d held; want withheld and dropped", v, tr.digests.Len())
	}
	// The same, with a lookup that ends in time finding nothing: charged.
	tr.fetchRecord = func(_ context.Context, p peer.ID) (*auction.Capacity, error) {
		return nil, fmt.Errorf("%w for %s", ErrNotFound, p)
	}
	sk2, _ := provider(t, nil, now)
	if v := offer(t, tr, relay, sealedDigest(t, sk2, now, 1)); v != p2p.Withhold {
		t.Fatalf("another passed-on digest: %v, want withhold", v)
	}
	drainChecks(t, tr)
	if pts := peers[0].P2P.Guard().Points(relay); pts < unbackedPoints*0.9 { // points decay by the second
		t.Errorf("the relay of a digest no record backs was charged %.0f points, want %d", pts, unbackedPoints)
	}
}
