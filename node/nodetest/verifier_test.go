package nodetest_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/node/renter/verifiertest"
	"github.com/idlegrid/idlegrid/store"
)

// rewriteArgs is an executor whose workloads run their arguments with
// words replaced: two providers that compute "the same" result with
// different rounding.
type rewriteArgs struct {
	executor.Executor
	with *strings.Replacer
}

func (r rewriteArgs) Prepare(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	spec.Command, spec.Args = r.replace(spec.Command), r.replace(spec.Args)
	return r.Executor.Prepare(ctx, spec)
}

func (r rewriteArgs) replace(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.with.Replace(a)
	}
	return out
}

// TestVerifierJudgesReplicaOutputs: a (fake) Docker job with replicas: 2
// and a verifier, the test module numcmp (numbers within 0.001). The two
// providers write the same metric rounded differently, so the outputs
// differ in bytes: the renter runs the verifier on both, records its
// verdict and completes the job, both leases completed. A job whose
// metrics differ by more than the tolerance ends unverified, the
// verdict saying why.
func TestVerifierJudgesReplicaOutputs(t *testing.T) {
	mod, err := verifiertest.Module()
	if err != nil {
		t.Skipf("numcmp not built: %v", err)
	}
	o := nodetest.Options{
		Configure: func(i int, cfg *node.Config) { cfg.Provider.Runtimes = []string{"docker"} },
		Executors: func(i int, dir string) []executor.Executor {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "docker"
			with := strings.NewReplacer("NEAR", "0.5000", "FAR", "0.5")
			if i%2 == 1 {
				with = strings.NewReplacer("NEAR", "0.5004", "FAR", "0.9")
			}
			return []executor.Executor{rewriteArgs{Executor: fake, with: with}}
		},
	}
	_, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	module, err := renter.Renter().AddArtifact(bytes.NewReader(mod))
	if err != nil {
		t.Fatal(err)
	}
	job := func(name, value string) []byte {
		return fmt.Appendf(nil, "name: %s\nimage: %s\ncommand: [\"train\", \"write:result.txt=loss %s\"]\nreplicas: 2\nverifier: %s\n"+
			"gpus: 1\ngpu: [a10]\ntier: bronze\nmax_price: 5\nduration: 10m\nbid_window: 3s\n", name, replicaImage, value, module)
	}

	j, err := renter.Renter().Submit(job("near", "NEAR"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobUnfilled, lease.JobCompleted, lease.JobUnverified, lease.JobFailed)
	if j.State != lease.JobCompleted || !hasJobEvent(j, "replicas-equivalent") || !hasVerdict(j, "equivalent (exit 0)") {
		logEvents(t, j)
		t.Fatalf("job %s %q, want completed: the verifier judged the outputs equivalent", j.State, j.Reason)
	}
	t.Logf("completed: %s", j.Reason)
	leases := jobLeases(t, renter, j)
	if len(leases) != 2 || leases[0].OutputCID == leases[1].OutputCID {
		t.Fatalf("%d leases, want two with outputs differing in bytes", len(leases))
	}
	for _, l := range leases {
		if l.State != lease.Completed {
			t.Fatalf("lease of %s %s (%s), want completed", lease.Short(l.Provider), l.State, l.Reason)
		}
	}
	if _, _, err := renter.Renter().Result(ctx, j.ID, ""); err != nil {
		t.Fatalf("result of a job judged equivalent: %v", err)
	}

	j, err = renter.Renter().Submit(job("far", "FAR"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobUnfilled, lease.JobCompleted, lease.JobUnverified, lease.JobFailed)
	if j.State != lease.JobUnverified || !hasJobEvent(j, "replicas-disagreed") || !hasVerdict(j, "different (exit code 1)") {
		logEvents(t, j)
		t.Fatalf("job %s %q, want unverified: the verifier judged the outputs different", j.State, j.Reason)
	}
	t.Logf("unverified: %s", j.Reason)
	for _, l := range jobLeases(t, renter, j) {
		if l.State != lease.Unverified {
			t.Fatalf("lease of %s %s, want unverified", lease.Short(l.Provider), l.State)
		}
	}
}

// hasVerdict reports whether j's history holds a verifier event saying
// what.
func hasVerdict(j *store.Job, what string) bool {
	for _, ev := range j.Events {
		if ev.Kind == "verifier" && strings.Contains(ev.Message, what) {
			return true
		}
	}
	return false
}
