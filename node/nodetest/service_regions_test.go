package nodetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// TestReplicatedServiceInDistinctRegions: a service with replicas: 2 and
// replica_regions: distinct, on three providers of which the two
// cheapest are in one country. Its replicas run on the cheapest provider
// and on the one in the other country, never on two hosts in one country,
// and each lease records the host it was placed on (its hardware
// fingerprint and region), as a batch job's replicas do.
func TestReplicatedServiceInDistinctRegions(t *testing.T) {
	regions := []string{"de", "de", "fr"}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}, {gpus: 1, bronze: 0.9}},
		nodetest.Options{Executors: modelExecutors(t, 10*time.Millisecond), Configure: func(i int, cfg *node.Config) {
			dockerOnly(i, cfg)
			replicaAttest(i, cfg)
			if i >= 1 && i <= len(regions) {
				cfg.Provider.Region = regions[i-1]
			}
		}})
	provs := c.ByRole(node.RoleProvider)
	cheapest, abroad := provs[0].Node.P2P().ID().String(), provs[2].Node.P2P().ID().String()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	spec := string(replicatedServiceJob("spread", 2)) + "replica_regions: distinct\n"
	j, err := renter.Renter().Submit([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var serving []*store.Lease
	if err := nodetest.WaitFor(ctx, "two healthy replicas", func() bool {
		serving = servingLeases(t, renter, j.ID)
		return len(serving) == 2
	}); err != nil {
		logJob(t, renter, j.ID)
		t.Fatal(err)
	}
	on := map[string]*store.Lease{}
	for _, l := range serving {
		on[l.Provider] = l
	}
	if on[cheapest] == nil || on[abroad] == nil {
		logJob(t, renter, j.ID)
		t.Fatalf("replicas run on %v; want the cheapest provider (de) and the one in fr", keys(on))
	}
	if a, b := on[cheapest], on[abroad]; a.HostRegion != "de" || b.HostRegion != "fr" || a.HostFingerprint == "" || a.HostFingerprint == b.HostFingerprint {
		t.Fatalf("hosts recorded: %q/%q in %q/%q; want distinct fingerprints in de and fr",
			a.HostFingerprint, b.HostFingerprint, a.HostRegion, b.HostRegion)
	}
}

// logJob logs a job's events.
func logJob(t *testing.T, r *node.Node, jobID string) {
	t.Helper()
	if cur, err := r.Store().GetJob(jobID); err == nil {
		for _, ev := range cur.Events {
			t.Logf("  %s: %s", ev.Kind, ev.Message)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
