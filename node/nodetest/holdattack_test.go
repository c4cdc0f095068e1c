package nodetest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestHoldAttackCannotStarveHonestRenters: the attack of issue 12. A
// renter with a fresh key posts well-formed RFQs for every GPU of the
// network (4 providers x 2 GPUs) with the longest bid window, takes the
// bids and never awards. Before, each bid held its GPUs until the window
// ended plus 3 s, so every honest job went unfilled while the attack
// lasted. Now a bid holds nothing unless the renter has paid this provider
// before: all 5 honest jobs posted during the attack are leased.
func TestHoldAttackCannotStarveHonestRenters(t *testing.T) {
	const providers, gpusEach, honestJobs = 4, 2, 5
	n := providers + 3 // bootstrap, providers, attacker, honest renter
	attackerIdx, honestIdx := n-2, n-1
	c := nodetest.New(t, n, nodetest.Options{
		Role: func(i, n int) node.Role {
			switch {
			case i == 0:
				return node.RoleBootstrap
			case i >= attackerIdx:
				return node.RoleRenter
			}
			return node.RoleProvider
		},
		Configure: func(i int, cfg *node.Config) {
			cfg.P2P.GossipHeartbeat = 100 * time.Millisecond
			if i >= 1 && i <= providers {
				cfg.GPU.Sim.Profiles = slices.Repeat([]string{"a10"}, gpusEach)
				cfg.Provider.FloorUSD = node.FloorUSD{Gold: 1.5, Silver: 1, Bronze: 0.5}
			}
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	attacker, honest := c.Members[attackerIdx], c.Members[honestIdx].Node
	waitAllAdvertised(t, ctx, c, honest, providers)

	// The attacker acknowledges every bid (so the provider counts it as
	// delivered) and never awards.
	var mu sync.Mutex
	bidders := map[string]int{}
	attacker.Node.P2P().HandleRequests(lease.BidProto, "attack.bid", lease.BidLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		b, _, err := auction.OpenBid(req)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		bidders[b.Provider] += len(b.GPUs)
		mu.Unlock()
		return lease.Ack, nil
	})
	spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: %d\ngpu: [a10]\ntier: bronze\nmax_price: 100\nduration: 10m\nbid_window: %dms\n",
		testModule, providers*gpusEach, auction.MaxBidWindowMs))
	if err != nil {
		t.Fatal(err)
	}
	attackCtx, stopAttack := context.WithCancel(ctx)
	attackDone := make(chan struct{})
	go func() {
		defer close(attackDone)
		// Below the validator's per-renter RFQ rate: the holds are under
		// test here, not the rate limit.
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			nonce := make([]byte, 16)
			_, _ = rand.Read(nonce)
			rfq, err := spec.RFQ(attacker.Node.ID(), nonce, time.Now())
			if err == nil {
				if raw, err := auction.SealRFQ(rfq, attacker.Key); err == nil {
					_ = attacker.Node.P2P().Publish(attackCtx, auction.GPUShard("a10").RFQTopic(), raw, 0)
				}
			}
			select {
			case <-attackCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { stopAttack(); <-attackDone }()

	// The attack is on once every provider bid all its GPUs to it.
	if err := nodetest.WaitFor(ctx, "every provider to bid its GPUs to the attacker", func() bool {
		mu.Lock()
		defer mu.Unlock()
		full := 0
		for _, g := range bidders {
			if g >= gpusEach {
				full++
			}
		}
		return full == providers
	}); err != nil {
		t.Fatal(err)
	}

	var ids []string
	for i := range honestJobs {
		j, err := honest.Renter().Submit(jobYAML(jobOpts{name: fmt.Sprintf("honest-%d", i), gpus: 1, duration: "2s"}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		j := waitJob(t, ctx, honest, id, lease.JobRunning, lease.JobCompleted, lease.JobUnfilled)
		if j.State == lease.JobUnfilled || len(j.Leases) == 0 {
			t.Fatalf("honest job %s starved during the hold attack: %s (%s)", id, j.State, j.Reason)
		}
	}
	// The attack went on the whole time: the attacker still draws bids.
	mu.Lock()
	before := sumBids(bidders)
	mu.Unlock()
	if err := nodetest.WaitFor(ctx, "the attacker to draw more bids", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sumBids(bidders) > before
	}); err != nil {
		t.Fatal(err)
	}
}

func sumBids(m map[string]int) int {
	total := 0
	for _, n := range m {
		total += n
	}
	return total
}
