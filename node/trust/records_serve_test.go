package trust

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// sealedRecord signs c with key.
func sealedRecord(t testing.TB, key crypto.PrivKey, c *auction.Capacity) []byte {
	t.Helper()
	raw, err := auction.SealCapacity(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// serveRecords routes RecordsProto on p to h and counts the requests.
func serveRecords(t *testing.T, p *roomtest.Peer, h p2p.Handler) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	p.P2P.HandleRequests(RecordsProto, "test.records", RecordsLimits, func(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
		n.Add(1)
		return h(ctx, from, req)
	})
	return &n
}

// servingOwnRecord is p's trust, holding a current capacity record of p
// as its own (Deps.OwnRecord), which its ServeRecords hands out.
func servingOwnRecord(t *testing.T, p *roomtest.Peer) *Trust {
	t.Helper()
	rec := sealedRecord(t, p.Key, testCapacity(p.Key, p.Clock.Now()))
	tr, err := New(Config{ReliabilityPrior: 0.8, Refresh: time.Second, SearchTimeout: 5 * time.Second, BeatEvery: time.Minute},
		Deps{Clock: p.Clock.Now, Key: p.Key, P2P: p.P2P, Store: p.Store, OwnRecord: func() []byte { return rec }})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// waitServes waits until tr's peerstore knows that p serves RecordsProto
// (identify's push after the handler was set).
func waitServes(t *testing.T, tr *Trust, p peer.ID) {
	t.Helper()
	roomtest.Eventually(t, 10*time.Second, "the records protocol to be known", func() bool { return tr.servesRecords(p) })
}

// noDHT makes tr's DHT lookups fail, counting them.
func noDHT(tr *Trust) *atomic.Int64 {
	var n atomic.Int64
	tr.fetchRecord = func(context.Context, peer.ID) (*auction.Capacity, error) {
		n.Add(1)
		return nil, ErrNotFound
	}
	return &n
}

// TestServedRecordBacksADigestWithoutTheDHT: a provider serves its own
// record to the peer checking its digest, that peer serves it on to the
// next one it passes the digest to, and neither looks anything up in the
// DHT.
func TestServedRecordBacksADigestWithoutTheDHT(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	checker, relay, prov := peers[0], peers[1], peers[2]
	now := prov.Clock.Now()
	provTrust := servingOwnRecord(t, prov)
	relayTrust, checkTrust := newTrust(t, relay), newTrust(t, checker)
	provAsked := serveRecords(t, prov, provTrust.ServeRecords)
	relayAsked := serveRecords(t, relay, relayTrust.ServeRecords)
	relayDHT, checkDHT := noDHT(relayTrust), noDHT(checkTrust)
	waitServes(t, relayTrust, prov.ID)
	waitServes(t, checkTrust, relay.ID)

	digest := sealedDigest(t, prov.Key, now, 1)
	if v := offer(t, relayTrust, prov.ID, digest); v != p2p.Withhold {
		t.Fatalf("a provider's first digest: %v; want it held for its check", v)
	}
	drainChecks(t, relayTrust)
	if v := offer(t, relayTrust, prov.ID, digest); v != p2p.Accept || provAsked.Load() != 1 || relayDHT.Load() != 0 {
		t.Fatalf("after its check: %v, the provider asked %d times, %d DHT lookups; want accepted on one ask, no lookup",
			v, provAsked.Load(), relayDHT.Load())
	}

	// The relay passes the digest on: the checker asks the relay (the peer
	// that passed it on) first, and the relay serves the record it checked.
	if v := offer(t, checkTrust, relay.ID, digest); v != p2p.Withhold {
		t.Fatalf("a passed-on digest: %v; want it held", v)
	}
	drainChecks(t, checkTrust)
	if offers, held, _ := checkTrust.digestOffers(); len(offers) != 1 || held != 0 {
		t.Fatalf("%d backed, %d held; want the provider backed", len(offers), held)
	}
	if relayAsked.Load() != 1 || provAsked.Load() != 1 || checkDHT.Load() != 0 {
		t.Fatalf("relay asked %d, provider asked %d, %d DHT lookups; want the relay once, no lookup",
			relayAsked.Load(), provAsked.Load(), checkDHT.Load())
	}
}

// TestRelaysRecordBacksTheNewerDigestsItPassesOn: a provider puts a new
// record at every lease, and a relay that backed it passes its newer
// digests on without fetching each one (they claim the shards its record
// serves). A checker handed such a digest is served the relay's older
// record, and takes it as backing, as the relay did: no DHT lookup, and
// no charge against the relay. Judged by the record the digest names,
// the provider was dropped for ten minutes and the honest relay charged,
// once per such provider (a fresh renter's view at 500 nodes).
func TestRelaysRecordBacksTheNewerDigestsItPassesOn(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	checker, relay, prov := peers[0], peers[1], peers[2]
	now := prov.Clock.Now()
	provTrust := servingOwnRecord(t, prov) // its record seq 1
	relayTrust, checkTrust := newTrust(t, relay), newTrust(t, checker)
	serveRecords(t, prov, provTrust.ServeRecords)
	relayAsked := serveRecords(t, relay, relayTrust.ServeRecords)
	noDHT(relayTrust)
	lookups := noDHT(checkTrust)
	waitServes(t, relayTrust, prov.ID)
	waitServes(t, checkTrust, relay.ID)

	if v := offer(t, relayTrust, prov.ID, sealedDigest(t, prov.Key, now, 1)); v != p2p.Withhold {
		t.Fatalf("a provider's first digest: %v; want it held for its check", v)
	}
	drainChecks(t, relayTrust)
	leased := testCapacity(prov.Key, now)
	leased.Seq, leased.GPUs[0].Free, leased.GPUs[0].LeaseID = 2, false, "lease-1"
	newer := sealDigestOf(t, prov.Key, leased, now, 2) // names record seq 2
	if v := offer(t, relayTrust, prov.ID, newer); v != p2p.Accept || len(relayTrust.checks) != 0 {
		t.Fatalf("the backed provider's newer digest at the relay: %v, %d checks queued; want accepted unchecked", v, len(relayTrust.checks))
	}

	if v := offer(t, checkTrust, relay.ID, newer); v != p2p.Withhold {
		t.Fatalf("the newer digest passed on: %v; want it held", v)
	}
	drainChecks(t, checkTrust)
	if offers, held, _ := checkTrust.digestOffers(); len(offers) != 1 || held != 0 {
		t.Fatalf("%d backed, %d held; want the provider backed by the relay's record", len(offers), held)
	}
	if relayAsked.Load() != 1 || lookups.Load() != 0 {
		t.Fatalf("relay asked %d times, %d DHT lookups; want one ask, no lookup", relayAsked.Load(), lookups.Load())
	}
	if pts := checker.P2P.Guard().Points(relay.ID); pts != 0 {
		t.Fatalf("the relay was charged %.1f points for an honest provider's digest", pts)
	}
}

// TestServedRecordThatDoesNotBackFallsBackToTheDHT: a relay serving a
// record that does not back the digest (the provider's record from before
// it added a GPU family, which may have been current when the relay
// checked it) is not charged and the checker looks the record up; one
// serving bytes that do not open, or a record nobody asked for, is charged.
func TestServedRecordThatDoesNotBackFallsBackToTheDHT(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	checker, relay, prov := peers[0], peers[1], peers[2]
	now := prov.Clock.Now()
	checkTrust := newTrust(t, checker)
	recs := fakeRecords(checkTrust)
	current := testCapacity(prov.Key, now)
	current.Seq = 2
	current.GPUs = append(current.GPUs, auction.GPU{UUID: "GPU-l4", Model: "l4", Name: "NVIDIA L4", VRAMMiB: 23034, ComputeCap: "8.9", Free: true})
	recs.put(current)
	old := sealedRecord(t, prov.Key, testCapacity(prov.Key, now)) // seq 1, A10s only
	stranger, _ := newKey(t)
	var answer atomic.Value
	answer.Store([][]byte{old})
	serveRecords(t, relay, func(context.Context, peer.ID, []byte) ([]byte, error) {
		return syncEnc.Marshal(recordsResponse{V: recordsVersion, Records: answer.Load().([][]byte)})
	})
	waitServes(t, checkTrust, relay.ID)

	check := func(what string) {
		t.Helper()
		d := sealDigestOf(t, prov.Key, current, checkTrust.now(), 2) // names record seq 2, A10 and L4
		parsed, _, _ := auction.OpenDigest(d)
		checkTrust.ev.update(parsed.Peer, checkTrust.now(), func(ev *peerEvidence) { *ev = peerEvidence{} })
		checkTrust.digests.Remove(parsed.Peer)
		if v := offer(t, checkTrust, relay.ID, d); v != p2p.Withhold {
			t.Fatalf("%s: %v; want held", what, v)
		}
		drainChecks(t, checkTrust)
		if offers, _, _ := checkTrust.digestOffers(); len(offers) != 1 {
			t.Fatalf("%s: %d backed; want the provider backed by its record in the DHT", what, len(offers))
		}
	}
	check("an older record without the digest's L4")
	if pts := checker.P2P.Guard().Points(relay.ID); pts != 0 {
		t.Fatalf("a relay serving an older record was charged %.0f points", pts)
	}
	answer.Store([][]byte{[]byte("not a record")})
	check("bytes that do not open")
	// Points decay with time, so each charge is compared with 90% of it.
	pts := checker.P2P.Guard().Points(relay.ID)
	if pts < 0.9*recordsAnswerPoints {
		t.Fatalf("a relay serving garbage was charged %.1f points; want %d", pts, recordsAnswerPoints)
	}
	answer.Store([][]byte{sealedRecord(t, stranger, testCapacity(stranger, now))})
	check("a record not asked for")
	if more := checker.P2P.Guard().Points(relay.ID) - pts; more < 0.9*recordsAnswerPoints {
		t.Fatalf("a relay serving a stranger's record was charged %.1f more points; want %d", more, recordsAnswerPoints)
	}
}

// TestServeRecordsServesOnlyWhatItVouchesFor: a node serves the records
// of providers it backed, not of held ones, not a malformed request, and
// refuses (and charges) a peer asking over its rate.
func TestServeRecordsServesOnlyWhatItVouchesFor(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	server, asker := newTrust(t, peers[0]), peers[1].ID
	now := server.now()
	backed, backedID := newKey(t)
	held, heldID := newKey(t)
	for _, k := range []crypto.PrivKey{backed, held} {
		id, _ := peer.IDFromPrivateKey(k)
		c := testCapacity(k, now)
		server.market.keep(id, c, sealedRecord(t, k, c), now)
	}
	server.ev.update(backedID.String(), now, func(ev *peerEvidence) { ev.RecordUntil = now.Add(time.Hour) })
	server.ev.update(heldID.String(), now, func(ev *peerEvidence) { ev.held = true })

	ask := func(ids ...peer.ID) (recordsResponse, error) {
		raw, _ := syncEnc.Marshal(recordsRequest{V: recordsVersion, Peers: peerStrings(ids)})
		resp, err := server.ServeRecords(context.Background(), asker, raw)
		var r recordsResponse
		if err == nil {
			err = recordsDec.Unmarshal(resp, &r)
		}
		return r, err
	}
	r, err := ask(backedID, heldID, peers[1].ID)
	if err != nil || len(r.Records) != 1 {
		t.Fatalf("served %d records, %v; want the backed provider's only", len(r.Records), err)
	}
	if _, signer, err := auction.OpenCapacity(r.Records[0]); err != nil || signer != backedID {
		t.Fatalf("served the record of %s, %v; want %s's", signer, err, backedID)
	}
	notAPeer, _ := syncEnc.Marshal(recordsRequest{V: recordsVersion, Peers: []string{"nope"}})
	noPeers, _ := syncEnc.Marshal(recordsRequest{V: recordsVersion})
	for _, bad := range [][]byte{nil, {0xff}, notAPeer, noPeers} {
		if _, err := server.ServeRecords(context.Background(), asker, bad); !errors.Is(err, p2p.ErrMalformed) {
			t.Fatalf("request %x: %v; want malformed", bad, err)
		}
	}
	refused := 0
	for range 2 * recordsPeerBurst {
		if _, err := ask(backedID); errors.Is(err, errRecordsRate) {
			refused++
		}
	}
	if refused == 0 || peers[0].P2P.Guard().Points(asker) == 0 {
		t.Fatalf("%d of %d requests refused, asker charged %.0f points; want a flood refused and charged",
			refused, 2*recordsPeerBurst, peers[0].P2P.Guard().Points(asker))
	}
}

// TestDigestSyncTakesRecordsWithThePage: a joining node that syncs a
// peer's backed providers asks that peer for their records, a batch per
// recordsBatch providers, and checks every digest without a DHT lookup.
func TestDigestSyncTakesRecordsWithThePage(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	server, client := newTrust(t, peers[0]), newTrust(t, peers[1])
	countedServer(peers[0], server)
	asked := serveRecords(t, peers[0], server.ServeRecords)
	lookups := noDHT(client)
	waitServes(t, client, peers[0].ID)
	now := server.now()
	const n = newPeersPerSource
	for range n {
		sk, id := newKey(t)
		c := testCapacity(sk, now)
		server.market.keep(id, c, sealedRecord(t, sk, c), now)
		if _, err := server.digests.Add(sealedDigest(t, sk, now, 1), now); err != nil {
			t.Fatal(err)
		}
		server.ev.update(id.String(), now, func(ev *peerEvidence) { ev.RecordUntil, ev.everBacked = now.Add(time.Hour), true })
	}
	added, err := client.syncFrom(context.Background(), peers[0].ID)
	if err != nil || added != n {
		t.Fatalf("synced %d, %v; want %d", added, err, n)
	}
	drainChecks(t, client)
	if offers, held, _ := client.digestOffers(); len(offers) != n || held != 0 {
		t.Fatalf("%d backed, %d held; want all %d backed", len(offers), held, n)
	}
	if want := int64(n / recordsBatch); asked.Load() != want || lookups.Load() != 0 {
		t.Fatalf("%d records requests, %d DHT lookups; want %d requests and no lookup", asked.Load(), lookups.Load(), want)
	}
}

// FuzzServeRecords: no request, however malformed, panics the server or
// makes it answer more records than it was asked for.
func FuzzServeRecords(f *testing.F) {
	peers := roomtest.Peers(f, 2)
	server := newTrust(f, peers[0])
	sk, id := newKey(f)
	now := server.now()
	c := testCapacity(sk, now)
	server.market.keep(id, c, sealedRecord(f, sk, c), now)
	server.ev.update(id.String(), now, func(ev *peerEvidence) { ev.RecordUntil = now.Add(time.Hour) })
	good, _ := syncEnc.Marshal(recordsRequest{V: recordsVersion, Peers: []string{id.String()}})
	f.Add(good)
	f.Add([]byte{0xa2, 0x61, 0x76, 0x01})
	f.Fuzz(func(t *testing.T, req []byte) {
		peers[0].Clock.Advance(time.Second) // keep the asker under its rate
		resp, err := server.ServeRecords(context.Background(), peers[1].ID, req)
		if err != nil {
			return
		}
		var q recordsRequest
		var r recordsResponse
		if err := recordsDec.Unmarshal(req, &q); err != nil {
			t.Fatalf("served a request that does not decode: %v", err)
		}
		if err := recordsDec.Unmarshal(resp, &r); err != nil || len(r.Records) > len(q.Peers) {
			t.Fatalf("answer of %d records to %d asked, %v", len(r.Records), len(q.Peers), err)
		}
	})
}

// TestRecheckAsksThePeerThatPassedTheNewerDigestOn: a backed provider's
// digest that names a newer record, on a shard the matched one does not
// serve, is re-checked with the record of the
// peer that passed that digest on, not with a DHT lookup.
func TestRecheckAsksThePeerThatPassedTheNewerDigestOn(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	checker, relay, prov := peers[0], peers[1], peers[2]
	now := prov.Clock.Now()
	checkTrust := newTrust(t, checker)
	lookups := noDHT(checkTrust)
	newer := testCapacity(prov.Key, now)
	newer.Seq = 2
	asked := serveRecords(t, relay, func(context.Context, peer.ID, []byte) ([]byte, error) {
		return syncEnc.Marshal(recordsResponse{V: recordsVersion, Records: [][]byte{sealedRecord(t, prov.Key, newer)}})
	})
	waitServes(t, checkTrust, relay.ID)
	// Backed on record seq 1, checked long enough ago to be re-checked.
	first := sealedDigest(t, prov.Key, now, 1)
	if _, err := checkTrust.digests.Add(first, now); err != nil {
		t.Fatal(err)
	}
	checkTrust.ev.update(prov.ID.String(), now, func(ev *peerEvidence) {
		ev.RecordUntil, ev.capSeq, ev.everBacked, ev.checkedAt = now.Add(time.Hour), 1, true, now.Add(-recheckEvery)
	})
	if v := offer(t, checkTrust, relay.ID, sealDigestOf(t, prov.Key, newer, now, 2)); v != p2p.Accept {
		t.Fatalf("a backed provider's newer digest: %v; want accepted", v)
	}
	drainChecks(t, checkTrust)
	if ev := checkTrust.ev.of(prov.ID.String()); ev.capSeq != 2 || asked.Load() != 1 || lookups.Load() != 0 {
		t.Fatalf("backed on record seq %d, relay asked %d times, %d DHT lookups; want seq 2 from one ask of the relay",
			ev.capSeq, asked.Load(), lookups.Load())
	}
}

// TestNewerDigestOnTheSameShardsIsNotRechecked: a provider puts a new
// record at every change of its GPUs; a newer digest that claims only
// shards its matched record serves moves nothing new and is not checked
// again, at any node.
func TestNewerDigestOnTheSameShardsIsNotRechecked(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr, prov := newTrust(t, peers[0]), peers[1]
	now := prov.Clock.Now()
	c := testCapacity(prov.Key, now)
	if _, err := tr.digests.Add(sealedDigest(t, prov.Key, now, 1), now); err != nil {
		t.Fatal(err)
	}
	tr.ev.update(prov.ID.String(), now, func(ev *peerEvidence) {
		ev.RecordUntil, ev.capSeq, ev.everBacked, ev.checkedAt = now.Add(time.Hour), 1, true, now.Add(-recheckEvery)
		ev.serves = auction.ProviderShards(c)
	})
	c.Seq = 2
	if v := offer(t, tr, prov.ID, sealDigestOf(t, prov.Key, c, now, 2)); v != p2p.Accept || len(tr.checks) != 0 {
		t.Fatalf("a newer digest on the same shards: %v, %d checks queued; want accepted, none", v, len(tr.checks))
	}
}
