package nodetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestPreemptedReplicaIsReplacedAlone: a bronze job with replicas: 2 runs
// on the two cheapest providers; a gold job then takes the cheapest
// host, which preempts its replica with the promised notice. The renter
// auctions that one replica again, never on the provider still running
// the other, so it lands on the third provider; the two replicas that
// finish agree and the job completes, with the preempted lease left as
// it ended.
func TestPreemptedReplicaIsReplacedAlone(t *testing.T) {
	provs := []provOpts{
		{gpus: 1, bronze: 0.3, notice: time.Second},                            // cheapest, takes gold too
		{gpus: 1, bronze: 0.5, tiers: []string{"bronze"}, notice: time.Second}, // the other replica
		{gpus: 1, bronze: 0.7, tiers: []string{"bronze"}, notice: time.Second}, // the replacement
	}
	c, renter := auctionCluster(t, provs, nodetest.Options{Configure: replicaAttest})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := c.ByRole(node.RoleProvider)
	host, keeper, spare := p[0].Node, p[1].Node, p[2].Node

	// The work (20 s) outlasts the gold auction (a 3 s window) and the
	// notice on a loaded machine; the lease's limit is the duration,
	// counted from the award.
	spec := fmt.Appendf(nil, "name: replicated-bronze\nmodule: %s\ncommand: [\"sleep:20s\", \"write:result.txt=42\"]\nreplicas: 2\n"+
		"gpus: 1\ngpu: [a10]\ntier: bronze\nmin_notice: 1s\nmax_price: 5\nduration: 1m\nbid_window: 3s\n", nodetest.DemoModule)
	j, err := renter.Renter().Submit(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "both replicas leased, one on the cheapest host", func() bool {
		cur, err := renter.Store().GetJob(j.ID)
		if err != nil {
			return false
		}
		on := map[string]bool{}
		for _, l := range jobLeases(t, renter, cur) {
			on[l.Provider] = true
		}
		return len(on) == 2 && on[host.ID().String()] && on[keeper.ID().String()]
	}); err != nil {
		cur, _ := renter.Store().GetJob(j.ID)
		logEvents(t, cur)
		t.Fatal(err)
	}
	// The host's record must show its GPU leased before the gold
	// auction, or the gold bid would not be a preemption.
	if err := nodetest.WaitFor(ctx, "the replica's lease active on the host", func() bool {
		c := host.Provider().Capacity()
		return c != nil && c.FreeGPUs() == 0
	}); err != nil {
		t.Fatal(err)
	}
	gold, err := renter.Renter().Submit(jobYAML(jobOpts{name: "gold", gpus: 1, tier: "gold", maxPrice: 10, duration: "10m"}))
	if err != nil {
		t.Fatal(err)
	}
	if gl := jobLeases(t, renter, waitJob(t, ctx, renter, gold.ID, lease.JobRunning, lease.JobCompleted)); len(gl) != 1 || gl[0].Provider != host.ID().String() {
		t.Fatalf("the gold job should land on the host (the only gold provider): %+v", gl)
	}

	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
	if j.State != lease.JobCompleted || !hasJobEvent(j, "replicas-agreed") {
		logEvents(t, j)
		t.Fatalf("job %s %q, want completed with the replicas agreeing", j.State, j.Reason)
	}
	states := map[string]string{}
	for _, l := range jobLeases(t, renter, j) {
		if _, dup := states[l.Provider]; dup {
			t.Fatalf("two leases on %s: the replacement went to a provider the job already used", lease.Short(l.Provider))
		}
		states[l.Provider] = l.State
	}
	want := map[string]string{host.ID().String(): lease.Preempted, keeper.ID().String(): lease.Completed, spare.ID().String(): lease.Completed}
	for prov, st := range want {
		if states[prov] != st {
			logEvents(t, j)
			t.Fatalf("lease on %s %q, want %s (all: %v)", lease.Short(prov), states[prov], st, states)
		}
	}
	for _, kind := range []string{"preempt-notice", "replica-lost"} {
		if !hasJobEvent(j, kind) {
			logEvents(t, j)
			t.Fatalf("no %s event in the job's history", kind)
		}
	}
}
