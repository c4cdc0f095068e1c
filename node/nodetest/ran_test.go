package nodetest_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// moduleSwapper runs every second job's work but signs another module's
// CID as what ran: a provider that runs a cheaper module than the one the
// job names and says so in its chain, as attest.JobEvent.Artifact makes
// it.
type moduleSwapper struct {
	*executortest.Fake
	n atomic.Int32
}

func (m *moduleSwapper) Artifact(ctx context.Context, h executor.Handle) (string, error) {
	if m.n.Add(1)%2 == 0 {
		return attest.RecordID([]byte("a cheaper module")).String(), nil
	}
	return m.Fake.Artifact(ctx, h)
}

// TestFinishedEventBindsWhatRan: a provider's signed finished event names
// the module that ran and the settings it ran under. The renter records
// them on the lease when they are the job's, and records the lease
// unverified, naming both modules, when the provider ran another.
func TestFinishedEventBindsWhatRan(t *testing.T) {
	o := nodetest.Options{Executors: func(_ int, dir string) []executor.Executor {
		fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
		fake.Runtime = "wasm"
		return []executor.Executor{&moduleSwapper{Fake: fake}}
	}}
	_, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	j, err := renter.Renter().Submit(canaryJob("as-asked"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
	ls := jobLeases(t, renter, j)
	if j.State != lease.JobCompleted || len(ls) != 1 {
		t.Fatalf("job %s %q, %d leases: want completed", j.State, j.Reason, len(ls))
	}
	if l := ls[0]; l.Artifact != nodetest.DemoModule || l.Run == nil || l.Run.Runtime != "wasm" || l.Run.Network != "none" {
		t.Fatalf("lease records artifact %q, run %+v; want the job's module %s run offline on wasm", l.Artifact, l.Run, nodetest.DemoModule)
	}
	if a := api.LeaseFromStore(ls[0]); a.Artifact != nodetest.DemoModule || a.Run == nil {
		t.Fatalf("the API's lease shows artifact %q, run %+v", a.Artifact, a.Run)
	}

	j, err = renter.Renter().Submit(canaryJob("swapped"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
	if j.State != lease.JobUnverified || !strings.Contains(j.Reason, "the job's module is "+nodetest.DemoModule) {
		t.Fatalf("job %s %q: want unverified naming the job's module", j.State, j.Reason)
	}
}
