package nodetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestBusyProviderStaysInItsPeersDHTBudget: a provider whose GPU is leased
// and freed ten times a second (short jobs) puts its capacity record no
// faster than its peers take PUTs from one peer (2/s, burst 20): none of
// them throttles it or charges it, and the last change still reaches the
// record. Before the provider coalesced its puts, every change was a PUT
// to every closest peer, each of them charged it 2 abuse points per PUT
// over the rate, and within seconds gossipsub's score had cut the busiest
// provider off from RFQs.
func TestBusyProviderStaysInItsPeersDHTBudget(t *testing.T) {
	c := nodetest.New(t, 4, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	busy := c.ByRole(node.RoleProvider)[0]
	prov := busy.Node.Provider()
	if err := nodetest.WaitFor(ctx, "first capacity record", func() bool { return prov.Capacity() != nil }); err != nil {
		t.Fatal(err)
	}
	devs, err := prov.GPUs().Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("provider GPUs: %v (%d)", err, len(devs))
	}
	uuid := devs[0].UUID

	// 150 lease changes at 10/s: 15 s, past the peers' burst of 20 at any
	// put rate above 2/s.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	const changes = 150
	last := ""
	for i := range changes {
		<-tick.C
		if i%2 == 0 {
			last = fmt.Sprintf("lease-%d", i)
			err = prov.LeaseGPU(uuid, last)
		} else {
			err = prov.ReleaseGPU(uuid)
		}
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	// changes is even, so the last change was a release: the record must
	// show the GPU free again.
	if err := nodetest.WaitFor(ctx, "the last change in the record", func() bool {
		rec := prov.Capacity()
		return rec != nil && len(rec.GPUs) > 0 && rec.GPUs[0].Free && rec.GPUs[0].LeaseID == ""
	}); err != nil {
		t.Fatalf("%v (last lease %s)", err, last)
	}

	for _, m := range c.Members {
		if m == busy {
			continue
		}
		if n := nodetest.CounterSum(t, m.Registry, "idlegrid_dht_puts_total", "result", "throttled"); n > 0 {
			t.Errorf("%s throttled %v of the busy provider's PUTs", m.Role, n)
		}
		for _, a := range m.Node.P2P().PeerAbuse() {
			if a.ID == busy.Node.ID() && a.LastAbuse == p2p.AbuseDHTRate {
				t.Errorf("%s charged the busy provider %.1f points for %s", m.Role, a.AbusePoints, a.LastAbuse)
			}
		}
	}
	if n := nodetest.CounterSum(t, c.ByRole(node.RoleBootstrap)[0].Registry, "idlegrid_dht_puts_total", "result", "valid"); n == 0 {
		t.Error("the bootstrap took no valid PUT: the test measured nothing")
	}
}
