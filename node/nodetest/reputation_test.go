package nodetest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// flakyExecutor fails a share of the workloads it runs: of every `every`
// workloads, all but the last exit 1 at once.
type flakyExecutor struct {
	*executortest.Fake
	every int

	mu sync.Mutex
	n  int
}

func (f *flakyExecutor) Prepare(ctx context.Context, s executor.Spec) (executor.Handle, error) {
	f.mu.Lock()
	f.n++
	fail := f.n%f.every != 0
	f.mu.Unlock()
	if fail {
		s.Args = []string{"print:crashed", "exit:1"}
	}
	return f.Fake.Prepare(ctx, s)
}

// reputationJob is a short job booked for hours: reputation weighs leases
// by their booked GPU-hours, so each outcome counts.
func reputationJob(name, tier string) []byte {
	return fmt.Appendf(nil, "name: %s\nmodule: %s\ncommand: [\"sleep:20ms\"]\ngpus: 1\ngpu: [a10]\ntier: %s\nmax_price: 5\nduration: 10h\nbid_window: 3s\n",
		name, nodetest.DemoModule, tier)
}

// TestFlakyProviderLosesToReliable: a cheap provider that fails two of
// every three leases soon loses auctions to a slightly dearer reliable
// one, because the renter's own lease outcomes lower its reliability; a
// new provider still wins bronze work, and gold work needs the gold badge.
func TestFlakyProviderLosesToReliable(t *testing.T) {
	provs := []provOpts{{gpus: 1, bronze: 0.50}, {gpus: 1, bronze: 0.55}}
	o := nodetest.Options{Executors: func(i int, dir string) []executor.Executor {
		fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
		fake.Runtime = "wasm"
		if i == 1 { // the first provider: cheap and flaky
			return []executor.Executor{&flakyExecutor{Fake: fake, every: 3}}
		}
		return []executor.Executor{fake}
	}}
	c, renter := auctionCluster(t, provs, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	flaky, reliable := c.ByRole(node.RoleProvider)[0].Node.ID().String(), c.ByRole(node.RoleProvider)[1].Node.ID().String()

	var winners []string
	for i := 0; i < 6; i++ {
		j, err := renter.Renter().Submit(reputationJob(fmt.Sprintf("rep-%d", i), "bronze"))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobFailed)
		l := jobLeases(t, renter, j)
		winners = append(winners, l[0].Provider)
		if l[0].Provider == reliable {
			break
		}
	}
	if winners[0] != flaky {
		t.Fatalf("the cheaper provider should win while both are unknown: winners %v", winners)
	}
	if winners[len(winners)-1] != reliable {
		t.Fatalf("the flaky provider kept winning: %v", winners)
	}
	fr, rr := renter.Trust().Reputation().Of(flaky), renter.Trust().Reputation().Of(reliable)
	if fr.OwnFailures == 0 || fr.Score >= rr.Score {
		t.Fatalf("flaky %+v should score below reliable %+v", fr, rr)
	}
}
