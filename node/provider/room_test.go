package provider

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// testModule is a WASM module CID for specs (never fetched: the runner
// does not run in these tests).
var testModule = auction.CapabilityCID("test-module").String()

// room is a provider built on a mocknet peer, with a renter peer that
// takes its bids and preemption notices.
type room struct {
	p      *Provider
	prov   *roomtest.Peer
	renter *roomtest.Peer

	mu      sync.Mutex
	bids    [][]byte
	notices [][]byte
}

func testOffer() OfferConfig {
	return OfferConfig{
		Region: "de", Runtimes: []string{"wasm"}, Tiers: []string{"gold", "silver", "bronze"},
		FloorUSD: FloorUSD{Gold: 3, Silver: 2, Bronze: 1}, MaxDuration: 24 * time.Hour,
		PreemptNotice: 2 * time.Second, RecordTTL: 30 * time.Minute, Republish: 10 * time.Minute,
	}
}

func newRoom(t *testing.T, gpus int) *room {
	t.Helper()
	return newRoomWith(t, gpus, testOffer())
}

// newRoomWith builds the room with the provider offering offer.
func newRoomWith(t *testing.T, gpus int, offer OfferConfig, prep ...func(prov *roomtest.Peer)) *room {
	t.Helper()
	peers := roomtest.Peers(t, 2)
	for _, f := range prep {
		f(peers[0])
	}
	r := &room{prov: peers[0], renter: peers[1]}
	profiles := make([]string, gpus)
	for i := range profiles {
		profiles[i] = "h100-sxm-80gb"
	}
	sim, err := gpu.NewSim(gpu.SimConfig{Profiles: profiles, Clock: r.prov.Clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	dir := t.TempDir()
	arts, err := executor.NewDirArtifacts(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
	fake.Runtime = "wasm"
	r.p, err = New(Config{
		Offer:    offer,
		Executor: ExecutorConfig{StopGrace: time.Second, KeepResults: time.Hour},
		Attest:   lease.Terms{Sample: time.Second, Window: time.Minute, VoucherInterval: time.Minute, VoucherGrace: 30 * time.Second},
		Version:  "test",
		// The rules under test here are others; takeup_test.go sets them.
		TakeUp: &auction.TakeUpLimits{},
	}, Deps{
		Clock: r.prov.Clock.Now, Key: r.prov.Key, P2P: r.prov.P2P, Store: r.prov.Store, Leases: r.prov.Leases,
		GPU: sim, Artifacts: arts, WorkDir: dir, Executors: []executor.Executor{fake},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.p.Close() })
	r.renter.P2P.HandleRequests(lease.BidProto, "test.bid", lease.BidLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.bids = append(r.bids, req)
		return lease.Ack, nil
	})
	r.renter.P2P.HandleRequests(lease.PreemptProto, "test.preempt", lease.PreemptLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.notices = append(r.notices, req)
		return lease.Ack, nil
	})
	return r
}

// rfq seals an RFQ of the renter peer.
func (r *room) rfq(t *testing.T, gpus int, tier auction.Tier) (raw []byte, rfq *auction.RFQ) {
	t.Helper()
	spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: %d\nmax_price: 10\nduration: 10m\ntier: %s\n", testModule, gpus, tier))
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	rfq, err = spec.RFQ(r.renter.ID, nonce, r.prov.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err = auction.SealRFQ(rfq, r.renter.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw, rfq
}

// gotBid is a bid as the renter received it.
type gotBid struct {
	raw []byte
	*auction.Bid
}

// takeBids returns the bids received so far and forgets them.
func (r *room) takeBids(t *testing.T) []gotBid {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gotBid
	for _, raw := range r.bids {
		b, _, err := auction.OpenBid(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, gotBid{raw, b})
	}
	r.bids = nil
	return out
}

// award seals the renter's award of a bid's first n GPUs.
func (r *room) award(t *testing.T, rfqRaw []byte, rfq *auction.RFQ, bid gotBid, n int) []byte {
	t.Helper()
	now := r.prov.Clock.Now()
	aw := &auction.Award{
		V: auction.MessagesVersion, Renter: r.renter.ID.String(), Provider: bid.Provider,
		RFQ: attest.RecordID(rfqRaw).String(), Bid: attest.RecordID(bid.raw).String(), JobCID: rfq.JobCID,
		GPUs: bid.GPUs[:n], PriceMicro: bid.PriceMicro, Tier: rfq.Tier, MaxDurationSec: rfq.MaxDurationSec,
		NoticeSec: bid.NoticeSec, Part: 1, Parts: 1, Nonce: []byte("0123456789abcdef"),
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(10 * time.Second).UnixMilli(),
	}
	aw.SetTerms(bid.LeaseTerms())
	raw, err := auction.SealAward(aw, r.renter.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (r *room) send(rfqRaw []byte) {
	r.p.HandleRFQ(context.Background(), p2p.Message{Topic: p2p.TopicRFQ, Data: rfqRaw})
}

func recordID(raw []byte) string { return attest.RecordID(raw).String() }

func cloneBid(b *auction.Bid) *auction.Bid {
	c := *b
	return &c
}
