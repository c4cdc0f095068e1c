package nodetest_test

import (
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
	"github.com/idlegrid/idlegrid/store"
)

// replicatedJob is a deterministic WASM job (the fake executor stands in
// for wazero) that runs a few attestation windows, so its leases are paid.
func replicatedJob(name string, replicas int) []byte {
	return fmt.Appendf(nil, "name: %s\nmodule: %s\ncommand: [\"sleep:2s\", \"write:result.txt=42\"]\nreplicas: %d\n"+
		"gpus: 1\ngpu: [a10]\ntier: bronze\nmax_price: 5\nduration: 10m\nbid_window: 3s\n", name, nodetest.DemoModule, replicas)
}

// TestReplicasCatchACheater: the cheapest of three providers returns a
// wrong output for every job. A job with replicas: 3 runs on all three
// (distinct keys and fingerprints); the two honest replicas agree, the
// renter re-runs the job, proves the cheater wrong and gossips the proof:
// the cheater's lease ends unverified, every node blocks it, and the job
// completes with the honest output. A second job with replicas: 2 then
// runs on the honest pair, which agrees, and both are paid.
func TestReplicasCatchACheater(t *testing.T) {
	o := nodetest.Options{
		Configure: replicaAttest, // the runs last a few windows: they are paid

		ReplayExecutor: nodetest.FakeReplay,
		Executors: func(i int, dir string) []executor.Executor {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "wasm"
			if i == 1 { // the cheapest provider
				fake.WrongEvery = 1
			}
			return []executor.Executor{fake}
		},
	}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}, {gpus: 1, bronze: 0.7}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	provs := c.ByRole(node.RoleProvider)
	cheat := provs[0].Node.ID()
	honest := []string{provs[1].Node.ID().String(), provs[2].Node.ID().String()}

	submitted := time.Now()
	j, err := renter.Renter().Submit(replicatedJob("replicated", 3))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
	settled := time.Now()
	if j.State != lease.JobCompleted || !hasJobEvent(j, "wrong-result-proven") {
		logEvents(t, j)
		t.Fatalf("job %s %q, want completed with the cheater proven wrong", j.State, j.Reason)
	}
	if !strings.Contains(j.Reason, lease.Short(cheat.String())) {
		t.Fatalf("reason %q does not name the cheater", j.Reason)
	}
	t.Logf("3 replicas compared and the cheater proven wrong %s after submit (leased %s, all verified %s after submit)",
		settled.Sub(submitted).Round(time.Millisecond), sinceCreated(j, "running"), sinceCreated(j, "verified"))
	ls := jobLeases(t, renter, j)
	if len(ls) != 3 {
		t.Fatalf("%d leases, want one per replica: %+v", len(ls), ls)
	}
	for _, l := range ls {
		want := lease.Completed
		if l.Provider == cheat.String() {
			want = lease.Unverified
		}
		if l.State != want {
			t.Fatalf("lease of %s %s (%s), want %s", lease.Short(l.Provider), l.State, l.Reason, want)
		}
	}
	for _, m := range c.Members {
		if m.Node.ID() == cheat {
			continue
		}
		if err := nodetest.WaitFor(ctx, "member blocks the cheater", func() bool { return m.Node.P2P().Blocked(cheat) }); err != nil {
			t.Fatalf("member %d (%s): %v", m.Index, m.Role, err)
		}
		for _, h := range provs[1:] {
			if m.Node.P2P().Blocked(h.Node.ID()) {
				t.Fatalf("member %d blocked honest provider %s", m.Index, h.Node.ID())
			}
		}
	}
	t.Logf("every node excluded the cheater %s after the renter proved it wrong", time.Since(settled).Round(time.Millisecond))
	res, _, err := renter.Renter().Result(ctx, j.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider == cheat.String() {
		t.Fatalf("the job's result is the cheater's lease %s", res.ID)
	}
	waitPaid(t, ctx, renter, j, honest)

	submitted = time.Now()
	pair, err := renter.Renter().Submit(replicatedJob("replicated-pair", 2))
	if err != nil {
		t.Fatal(err)
	}
	pair = waitJob(t, ctx, renter, pair.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
	if pair.State != lease.JobCompleted || !hasJobEvent(pair, "replicas-agreed") {
		logEvents(t, pair)
		t.Fatalf("job %s %q, want completed with the replicas agreeing", pair.State, pair.Reason)
	}
	t.Logf("2 honest replicas agreed %s after submit (leased %s after submit)", time.Since(submitted).Round(time.Millisecond), sinceCreated(pair, "running"))
	waitPaid(t, ctx, renter, pair, honest)
}

// replicaAttest pays in short windows, with a grace that covers a
// telemetry window delayed by three providers and a renter in one process
// under the race detector. (How long a provider takes to start the run
// does not count: telemetry is due from the lease's started event.)
func replicaAttest(_ int, cfg *node.Config) {
	cfg.Attest.Sample = 50 * time.Millisecond
	cfg.Attest.Window = 500 * time.Millisecond
	cfg.Attest.VoucherInterval = 500 * time.Millisecond
	cfg.Attest.VoucherGrace = 2 * time.Second
}

// waitPaid waits until the job's leases on each of providers are paid.
func waitPaid(t *testing.T, ctx context.Context, renter *node.Node, j *store.Job, providers []string) {
	t.Helper()
	if err := nodetest.WaitFor(ctx, "the honest replicas are paid", func() bool {
		paid := map[string]bool{}
		for _, l := range jobLeases(t, renter, j) {
			if l.State == lease.Completed && l.PaidMicro > 0 {
				paid[l.Provider] = true
			}
		}
		for _, p := range providers {
			if !paid[p] {
				return false
			}
		}
		return true
	}); err != nil {
		if cur, gerr := renter.Store().GetJob(j.ID); gerr == nil {
			logEvents(t, cur)
		}
		for _, l := range jobLeases(t, renter, j) {
			t.Logf("lease %s on %s: %s (%s), paid %d µUSD until %d", lease.Short(l.ID), lease.Short(l.Provider), l.State, l.Reason, l.PaidMicro, l.PaidUntilMs)
		}
		t.Fatal(err)
	}
}

// sinceCreated is how long after the job's creation its last event of
// kind came.
func sinceCreated(j *store.Job, kind string) time.Duration {
	var at int64
	for _, ev := range j.Events {
		if ev.Kind == kind {
			at = ev.AtMs
		}
	}
	return time.Duration(at-j.CreatedAtMs) * time.Millisecond
}

func logEvents(t *testing.T, j *store.Job) {
	t.Helper()
	for _, ev := range j.Events {
		t.Logf("  %s: %s", ev.Kind, ev.Message)
	}
}

// replicaImage is a (fake) Docker image: a Docker job is not
// deterministic, so a disagreement between its replicas proves nothing.
const replicaImage = "example.org/batch@sha256:7d2c4e1a7d2c4e1a7d2c4e1a7d2c4e1a7d2c4e1a7d2c4e1a7d2c4e1a7d2c4e1a"

// TestReplicasDisagreeOnDocker: with two providers, a job asking for
// replicas: 3 ends unfilled saying how many independent providers bid,
// with no lease awarded. A Docker job with replicas: 2 runs on both; the
// cheaper returns a wrong output, and as no re-run can prove which output
// is wrong the job ends unverified naming both providers, both leases
// count as failures, and nobody is blocked.
func TestReplicasDisagreeOnDocker(t *testing.T) {
	o := nodetest.Options{
		Configure: func(i int, cfg *node.Config) { cfg.Provider.Runtimes = []string{"docker"} },
		Executors: func(i int, dir string) []executor.Executor {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "docker"
			if i == 1 { // the cheaper provider
				fake.WrongEvery = 1
			}
			return []executor.Executor{fake}
		},
	}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	provs := c.ByRole(node.RoleProvider)
	job := func(name string, replicas int) []byte {
		return fmt.Appendf(nil, "name: %s\nimage: %s\ncommand: [\"write:result.txt=42\"]\nreplicas: %d\n"+
			"gpus: 1\ngpu: [a10]\ntier: bronze\nmax_price: 5\nduration: 10m\nbid_window: 3s\n", name, replicaImage, replicas)
	}

	j, err := renter.Renter().Submit(job("three", 3))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobUnfilled, lease.JobCompleted, lease.JobUnverified, lease.JobFailed)
	if j.State != lease.JobUnfilled || !strings.Contains(j.Reason, "replicas: 3 needs 3 independent providers") || len(j.Leases) != 0 {
		logEvents(t, j)
		t.Fatalf("job %s %q with %d leases, want unfilled before any award, saying why", j.State, j.Reason, len(j.Leases))
	}
	t.Logf("unfilled: %s", j.Reason)

	j, err = renter.Renter().Submit(job("two", 2))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobUnfilled, lease.JobCompleted, lease.JobUnverified, lease.JobFailed)
	if j.State != lease.JobUnverified || !hasJobEvent(j, "replicas-disagreed") {
		logEvents(t, j)
		t.Fatalf("job %s %q, want unverified: the replicas disagree", j.State, j.Reason)
	}
	t.Logf("unverified: %s", j.Reason)
	for _, p := range provs {
		if !strings.Contains(j.Reason, lease.Short(p.Node.ID().String())) {
			t.Fatalf("reason %q does not name provider %s", j.Reason, p.Node.ID())
		}
	}
	for _, l := range jobLeases(t, renter, j) {
		if l.State != lease.Unverified {
			t.Fatalf("lease of %s %s (%s), want unverified: nothing shows which replica is right", lease.Short(l.Provider), l.State, l.Reason)
		}
	}
	if _, _, err := renter.Renter().Result(ctx, j.ID, ""); err == nil {
		t.Fatal("the result of a job whose replicas disagree was served")
	}
	for _, m := range c.Members {
		for _, p := range provs {
			if m.Node.P2P().Blocked(p.Node.ID()) {
				t.Fatalf("member %d blocked provider %s on an unproven disagreement", m.Index, p.Node.ID())
			}
		}
	}
}

// TestReplicaCPUCheaterNotPaidItsLastStretch: CPU-only work is paid by
// time while it runs and up to when it finished only once its completion
// is verified. For a replica that waits for the comparison: the honest
// replica of a CPU-only WASM job is paid up to its finish, the cheater,
// proven wrong, never gets that last voucher.
func TestReplicaCPUCheaterNotPaidItsLastStretch(t *testing.T) {
	o := nodetest.Options{
		Configure:      replicaAttest,
		ReplayExecutor: nodetest.FakeReplay,
		Executors: func(i int, dir string) []executor.Executor {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "wasm"
			if i == 1 { // the cheaper provider
				fake.WrongEvery = 1
			}
			return []executor.Executor{fake}
		},
	}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5, cpuBeside: true}, {gpus: 1, bronze: 0.6, cpuBeside: true}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cheat := c.ByRole(node.RoleProvider)[0].Node.ID().String()
	j, err := renter.Renter().Submit(fmt.Appendf(nil, "name: cpu-replicas\nmodule: %s\ncommand: [\"sleep:2s\", \"write:result.txt=42\"]\n"+
		"replicas: 2\ngpus: 0\nmax_price: 5\nduration: 10m\nbid_window: 3s\n", nodetest.DemoModule))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
	if j.State != lease.JobCompleted || !hasJobEvent(j, "wrong-result-proven") {
		logEvents(t, j)
		t.Fatalf("job %s %q, want completed with the cheater proven wrong", j.State, j.Reason)
	}
	if err := nodetest.WaitFor(ctx, "the honest replica paid up to its finish", func() bool {
		for _, l := range jobLeases(t, renter, j) {
			if l.Provider != cheat && l.State == lease.Completed && l.PaidUntilMs >= l.WorkFinishedMs {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v: %+v", err, jobLeases(t, renter, j))
	}
	for _, l := range jobLeases(t, renter, j) {
		// The last voucher covers exactly up to the finish; those paid
		// while the work ran cover up to when they were signed, which
		// can be a little past it.
		if l.Provider == cheat && (l.State != lease.Unverified || l.PaidUntilMs == l.WorkFinishedMs) {
			t.Fatalf("the cheater's lease %s (%s), paid until %d, finished %d: want unverified and no voucher up to its finish",
				l.State, l.Reason, l.PaidUntilMs, l.WorkFinishedMs)
		}
	}
}
