package nodetest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// TestGoldPreemptsBronzeWhichIsReauctioned: a gold job lands on a host full
// of bronze leases; the bronze lease is preempted with the promised notice,
// re-auctioned to another provider, and finishes.
func TestGoldPreemptsBronzeWhichIsReauctioned(t *testing.T) {
	provs := []provOpts{
		{gpus: 2, bronze: 0.3, notice: time.Second},                            // cheap, takes gold too
		{gpus: 2, bronze: 0.6, tiers: []string{"bronze"}, notice: time.Second}, // bronze only
	}
	c, renter := auctionCluster(t, provs, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	host, other := c.ByRole(node.RoleProvider)[0].Node, c.ByRole(node.RoleProvider)[1].Node

	bronze, err := renter.Renter().Submit(jobYAML(jobOpts{name: "bronze", gpus: 2, tier: "bronze", duration: "8s", minNotice: "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	bj := waitJob(t, ctx, renter, bronze.ID, lease.JobRunning)
	if l := jobLeases(t, renter, bj); len(l) != 1 || l[0].Provider != host.ID().String() {
		t.Fatalf("bronze job should start on the cheap host: %+v", l)
	}
	// The host's capacity record must show its GPUs leased before the
	// gold auction, or the gold bid would not be a preemption.
	if err := nodetest.WaitFor(ctx, "bronze lease active on the host", func() bool {
		c := host.Provider().Capacity()
		return c != nil && c.FreeGPUs() == 0
	}); err != nil {
		t.Fatal(err)
	}
	// The gold job outlasts the test, so the host stays busy and the bronze
	// work must move elsewhere.
	gold, err := renter.Renter().Submit(jobYAML(jobOpts{name: "gold", gpus: 2, tier: "gold", maxPrice: 10, duration: "10m"}))
	if err != nil {
		t.Fatal(err)
	}
	gj := waitJob(t, ctx, renter, gold.ID, lease.JobRunning, lease.JobCompleted)
	gl := jobLeases(t, renter, gj)
	if len(gl) != 1 || gl[0].Provider != host.ID().String() {
		t.Fatalf("gold job should land on the host (the only gold provider): %+v", gl)
	}
	if gl[0].State != lease.Awarded {
		t.Fatalf("the gold lease should wait for the bronze notice: state %s", gl[0].State)
	}
	bj = waitJob(t, ctx, renter, bronze.ID, lease.JobCompleted)
	leases := jobLeases(t, renter, bj)
	if len(leases) != 2 {
		for _, ev := range bj.Events {
			t.Logf("bronze: %s %s", ev.Kind, ev.Message)
		}
		gj2, _ := renter.Store().GetJob(gold.ID)
		for _, ev := range gj2.Events {
			t.Logf("gold: %s %s", ev.Kind, ev.Message)
		}
		pl, _ := host.Store().Leases()
		for _, l := range pl {
			t.Logf("host lease %s tier %s state %s start %d preempt %d gpus %v", l.ID[len(l.ID)-6:], l.Tier, l.State, l.StartsAtMs, l.PreemptAtMs, l.GPUs)
		}
		t.Fatalf("bronze job should have 2 leases (preempted, then re-auctioned): %+v", leases)
	}
	if leases[0].Provider != host.ID().String() || leases[0].State != lease.Preempted {
		t.Fatalf("first bronze lease: %+v, want preempted on the host", leases[0])
	}
	if leases[1].Provider != other.ID().String() {
		t.Fatalf("re-auctioned lease went to %s, want %s", leases[1].Provider, other.ID())
	}
	// The host issued its notice between the gold auction's award (sent
	// when its window closed) and the renter's record of the lease: time
	// from the award to the preemption is at least the notice given, and
	// is measured without the reply's delay on a loaded machine.
	notice := leases[0].PreemptAtMs - gjEventTime(t, renter, gj, "window")
	if notice < 900 {
		t.Fatalf("preemption %dms after the gold award, promised 1s of notice", notice)
	}
	if gj, _ := renter.Store().GetJob(gold.ID); gj.State != lease.JobRunning {
		t.Fatalf("gold job %s, want running", gj.State)
	}
	if l := jobLeases(t, renter, gj); l[0].State != lease.Running {
		t.Fatalf("gold lease %s after the notice ran out, want active", l[0].State)
	}
	kinds := []string{}
	for _, ev := range bj.Events {
		kinds = append(kinds, ev.Kind)
	}
	for _, want := range []string{"preempt-notice", "preempted", "reauction", "completed"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("bronze job events %v lack %q", kinds, want)
		}
	}
}

// gjEventTime is when the renter recorded the gold job's first event of kind.
func gjEventTime(t *testing.T, r *node.Node, j *store.Job, kind string) int64 {
	t.Helper()
	for _, ev := range j.Events {
		if ev.Kind == kind {
			return ev.AtMs
		}
	}
	t.Fatalf("gold job has no %s event", kind)
	return 0
}
