package nodetest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// abandoner is a renter that posts RFQs for every GPU of the network,
// awards every bid and never takes an award up: its job protocol holds
// each spec request open without answering.
type abandoner struct {
	m    *nodetest.Member
	spec *auction.JobSpec

	mu       sync.Mutex
	bids     map[string][][]byte // RFQ ID -> sealed bids
	accepted []abandonedAward
	rounds   int
}

type abandonedAward struct {
	provider string
	lease    string
	at       time.Time
}

func newAbandoner(t testing.TB, ctx context.Context, m *nodetest.Member, gpus int) *abandoner {
	t.Helper()
	spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: %d\ngpu: [a10]\ntier: bronze\nmax_price: 100\nduration: 10m\nbid_window: 2s\n",
		testModule, gpus))
	if err != nil {
		t.Fatal(err)
	}
	a := &abandoner{m: m, spec: spec, bids: map[string][][]byte{}}
	m.Node.P2P().HandleRequests(lease.BidProto, "abandon.bid", lease.BidLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		b, _, err := auction.OpenBid(req)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.bids[b.RFQ] = append(a.bids[b.RFQ], req)
		a.mu.Unlock()
		return lease.Ack, nil
	})
	m.Node.P2P().HandleFrames(lease.JobProto, "abandon.job", lease.JobLimits, func(rctx context.Context, _ peer.ID, _ []byte, _ func([]byte) error) error {
		select { // never answer
		case <-rctx.Done():
		case <-ctx.Done():
		}
		return nil
	})
	return a
}

// round posts one RFQ asking every provider to bid, waits out its window
// and awards every bid it drew.
func (a *abandoner) round(ctx context.Context) {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	rfq, err := a.spec.RFQ(a.m.Node.ID(), nonce, time.Now())
	if err != nil {
		return
	}
	rfq.WantBids = auction.EveryoneBids
	raw, err := auction.SealRFQ(rfq, a.m.Key)
	if err != nil {
		return
	}
	rfqID := attest.RecordID(raw).String()
	_ = a.m.Node.P2P().Publish(ctx, auction.GPUShard("a10").RFQTopic(), raw, 0)
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(rfq.BidWindowMs) * time.Millisecond):
	}
	a.mu.Lock()
	bids := a.bids[rfqID]
	delete(a.bids, rfqID)
	a.rounds++
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, bidRaw := range bids {
		wg.Go(func() { a.award(ctx, raw, rfq, bidRaw) })
	}
	wg.Wait()
}

func (a *abandoner) award(ctx context.Context, rfqRaw []byte, rfq *auction.RFQ, bidRaw []byte) {
	bid, _, err := auction.OpenBid(bidRaw)
	if err != nil {
		return
	}
	now := time.Now()
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	aw := &auction.Award{
		V: auction.MessagesVersion, Renter: a.m.Node.ID().String(), Provider: bid.Provider,
		RFQ: attest.RecordID(rfqRaw).String(), Bid: attest.RecordID(bidRaw).String(), JobCID: rfq.JobCID,
		GPUs: bid.GPUs, PriceMicro: bid.PriceMicro, Tier: rfq.Tier, MaxDurationSec: rfq.MaxDurationSec,
		NoticeSec: bid.NoticeSec, Part: 1, Parts: 1, Nonce: nonce,
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(10 * time.Second).UnixMilli(),
	}
	raw, err := auction.SealAward(aw, a.m.Key)
	if err != nil {
		return
	}
	prov, err := peer.Decode(bid.Provider)
	if err != nil {
		return
	}
	resp, err := a.m.Node.P2P().Request(ctx, prov, lease.LeaseProto, raw, lease.LeaseLimits)
	if err != nil || len(resp) == 0 || resp[0] != lease.TagAccept {
		return
	}
	a.mu.Lock()
	a.accepted = append(a.accepted, abandonedAward{provider: bid.Provider, lease: attest.RecordID(raw).String(), at: time.Now()})
	a.mu.Unlock()
}

func (a *abandoner) snapshot() (accepted []abandonedAward, rounds int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.accepted), a.rounds
}

// abandonMarket is the market of the award-and-abandon attack: a
// bootstrap peer, abandonProviders providers of abandonGPUs A10s each
// (bronze floor $0.50), attacker renters and an honest renter.
type abandonMarket struct {
	c         *nodetest.Cluster
	attackers []*nodetest.Member
	honest    *node.Node
	provByID  map[string]*node.Node
}

const abandonProviders, abandonGPUs = 4, 2

func newAbandonMarket(tb testing.TB, ctx context.Context, attackers int) *abandonMarket {
	tb.Helper()
	n := abandonProviders + attackers + 2
	c := nodetest.New(tb, n, nodetest.Options{
		Role: func(i, n int) node.Role {
			switch {
			case i == 0:
				return node.RoleBootstrap
			case i > abandonProviders:
				return node.RoleRenter
			}
			return node.RoleProvider
		},
		Configure: func(i int, cfg *node.Config) {
			cfg.P2P.GossipHeartbeat = 100 * time.Millisecond
			if i >= 1 && i <= abandonProviders {
				cfg.GPU.Sim.Profiles = slices.Repeat([]string{"a10"}, abandonGPUs)
				cfg.Provider.FloorUSD = node.FloorUSD{Gold: 1.5, Silver: 1, Bronze: 0.5}
			}
		},
	})
	if err := c.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
	m := &abandonMarket{c: c, attackers: c.Members[abandonProviders+1 : n-1], honest: c.Members[n-1].Node, provByID: map[string]*node.Node{}}
	if err := nodetest.WaitSearchable(ctx, m.honest, abandonProviders); err != nil {
		tb.Fatal(err)
	}
	for _, p := range c.ByRole(node.RoleProvider) {
		m.provByID[p.Node.ID().String()] = p.Node
	}
	return m
}

// TestAwardAndAbandon: the award-and-abandon attack of issue 23. A renter
// with a fresh key asks every provider for all its GPUs (4 providers x 2
// GPUs), awards every bid and never serves a spec. Before, each award held
// its GPUs for the provider's minute of spec-fetch patience, round after
// round, and honest jobs ended unfilled. Now each provider frees the GPUs
// when the renter has not served the spec within auction.TakeUpPatience
// (10 s), notes the award abandoned and gossips the note; with its own
// abandon and the others' notes, every provider refuses the renter, which
// gets at most two awards from each in all. An honest renter's jobs posted
// while the attack goes on are all leased.
func TestAwardAndAbandon(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	m := newAbandonMarket(t, ctx, 1)
	honest, provByID := m.honest, m.provByID

	attackCtx, stopAttack := context.WithCancel(ctx)
	att := newAbandoner(t, attackCtx, m.attackers[0], abandonProviders*abandonGPUs)
	attackDone := make(chan struct{})
	go func() {
		defer close(attackDone)
		for attackCtx.Err() == nil {
			att.round(attackCtx)
			select {
			case <-attackCtx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	defer func() { stopAttack(); <-attackDone }()

	// The attack is on once every provider countersigned an award of it.
	if err := nodetest.WaitFor(ctx, "every provider to accept an award of the attacker", func() bool {
		acc, _ := att.snapshot()
		seen := map[string]bool{}
		for _, a := range acc {
			seen[a.provider] = true
		}
		return len(seen) == abandonProviders
	}); err != nil {
		t.Fatal(err)
	}
	// Each provider frees the abandoned award's GPUs after the patience,
	// not the minute it used to wait.
	first, _ := att.snapshot()
	for _, a := range first {
		p := provByID[a.provider]
		var ended time.Time
		if err := nodetest.WaitFor(ctx, "provider "+lease.Short(a.provider)+" to end the abandoned lease", func() bool {
			l, err := p.Store().GetLease(a.lease)
			if err != nil || !lease.State(l.State).Terminal() {
				return false
			}
			if !strings.Contains(l.Reason, "award abandoned") {
				t.Errorf("abandoned lease %s ended %s: %s", lease.Short(a.lease), l.State, l.Reason)
			}
			ended = time.UnixMilli(l.UpdatedAtMs)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		held := ended.Sub(a.at)
		t.Logf("provider %s freed the abandoned award's GPUs %s after accepting it", lease.Short(a.provider), held.Round(10*time.Millisecond))
		if held > 45*time.Second {
			t.Errorf("provider %s held an abandoned award %s (the old spec-fetch patience was a minute)", lease.Short(a.provider), held)
		}
	}

	// Honest jobs posted while the attack goes on are all leased. They
	// wait as a renter's jobs do by default (market.max_wait): a provider
	// whose first abandon has not yet met the others' notes takes one more
	// award of the attacker, so for up to another patience its GPUs are
	// the attacker's, and a job auctioned only then would find none (the
	// cluster's own default is to give up at the first auction).
	var ids []string
	for i := range 5 {
		j, err := honest.Renter().Submit(jobYAML(jobOpts{name: fmt.Sprintf("honest-%d", i), gpus: 1, duration: "2s", maxWait: "1m"}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		j := waitJob(t, ctx, honest, id, lease.JobRunning, lease.JobCompleted, lease.JobUnfilled, lease.JobFailed)
		if len(j.Leases) == 0 {
			t.Fatalf("honest job %s not leased during the award-and-abandon attack: %s (%s)", id, j.State, j.Reason)
		}
	}
	// The attacker kept going the whole time, and no provider took more
	// than two of its awards (its own two abandons, or one and the
	// others' notes, refuse it).
	_, roundsBefore := att.snapshot()
	if err := nodetest.WaitFor(ctx, "two more attack rounds", func() bool {
		_, r := att.snapshot()
		return r >= roundsBefore+2
	}); err != nil {
		t.Fatal(err)
	}
	acc, rounds := att.snapshot()
	per := map[string]int{}
	for _, a := range acc {
		per[lease.Short(a.provider)]++
	}
	t.Logf("%d attack rounds, awards accepted per provider: %v", rounds, per)
	for p, k := range per {
		if k > 2 {
			t.Errorf("provider %s accepted %d awards of a renter that abandoned them", p, k)
		}
	}
}
