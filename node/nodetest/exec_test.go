package nodetest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// builtinRuntimes gives providers the node's own runtimes (the real WASM
// executor) instead of the scripted fake.
func builtinRuntimes(int, string) []executor.Executor { return nil }

func demoJob(name, args string) []byte {
	return fmt.Appendf(nil, "name: %s\nmodule: %s\ncommand: [%s]\ngpus: 1\ngpu: [a10]\ntier: silver\nmax_price: 5\nduration: 30s\nbid_window: 3s\n",
		name, demo.CID, args)
}

// TestWASMJobEndToEnd: a renter posts a job naming a WASM module only it
// holds; the winning provider fetches the spec and the module over
// /idlegrid/job/1.0.0 (both verified against their CIDs), runs the module
// in the real WASM executor, and the renter follows the lease to
// completion, reads the log and downloads the output, verified.
func TestWASMJobEndToEnd(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.9}}, nodetest.Options{Executors: builtinRuntimes})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit(demoJob("demo", `"64"`))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobFailed)
	if j.State != lease.JobCompleted {
		t.Fatalf("job %s: %s", j.State, j.Reason)
	}
	leases := jobLeases(t, renter, j)
	if len(leases) != 1 {
		t.Fatalf("leases %+v", leases)
	}
	l := leases[0]
	if l.State != lease.Completed || l.ExitCode == nil || *l.ExitCode != 0 || l.OutputCID == "" {
		t.Fatalf("renter's lease copy %+v", l)
	}
	if cheap := c.ByRole(node.RoleProvider)[0].Node.ID().String(); l.Provider != cheap {
		t.Errorf("ran on %s, want the cheaper provider %s", l.Provider, cheap)
	}
	var logs bytes.Buffer
	if err := renter.Renter().Logs(ctx, j.ID, "", false, &logs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"start: n=64", "progress 4/4", "done: n=64"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	_, path, err := renter.Renter().Result(ctx, j.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := executor.VerifyOutput(executor.Output{CID: l.OutputCID, Size: l.OutputSize, Path: path}); err != nil {
		t.Fatal(err)
	}
	got := executortest.TarFiles(t, path)[demo.ResultFile]
	if !strings.HasPrefix(got, "n=64 checksum=") {
		t.Fatalf("%s = %q", demo.ResultFile, got)
	}

	// An interrupted download resumes: keep the first half as a partial
	// file; only the rest crosses the network again.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	full, before := l.OutputSize, renter.Renter().ResultBytesFetched()
	data := readFile(t, executorOutputOf(t, c, l.ID))
	half := int64(len(data) / 2)
	if err := os.WriteFile(path+".part", data[:half], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, path, err = renter.Renter().Result(ctx, j.ID, ""); err != nil {
		t.Fatal(err)
	}
	if fetched := renter.Renter().ResultBytesFetched() - before; fetched != full-half {
		t.Errorf("resumed download fetched %d bytes, want the missing %d", fetched, full-half)
	}
	if !bytes.Equal(readFile(t, path), data) {
		t.Error("resumed download differs from the provider's output")
	}

	// A corrupt partial download is discarded, never served.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data[:half])
	bad[0] ^= 0xff
	if err := os.WriteFile(path+".part", bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := renter.Renter().Result(ctx, j.ID, ""); err == nil || !strings.Contains(err.Error(), "discarded") {
		t.Fatalf("corrupt partial download: err %v, want a CID mismatch", err)
	}
	if _, path, err = renter.Renter().Result(ctx, j.ID, ""); err != nil || !bytes.Equal(readFile(t, path), data) {
		t.Fatalf("download after discarding the corrupt part: %v", err)
	}
}

// executorOutputOf finds the provider's kept output tar of a lease.
func executorOutputOf(t *testing.T, c *nodetest.Cluster, leaseID string) string {
	t.Helper()
	for _, m := range c.ByRole(node.RoleProvider) {
		if p := m.Node.Provider().KeptOutputPath(leaseID); p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	t.Fatalf("no provider keeps the output of %s", leaseID)
	return ""
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFailingWASMJob: a module that exits non-zero fails the job with the
// exit code as the reason; its log still reaches the renter.
func TestFailingWASMJob(t *testing.T) {
	_, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{Executors: builtinRuntimes})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit(demoJob("bad-n", `"0"`))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobFailed, lease.JobCompleted)
	if j.State != lease.JobFailed || !strings.Contains(j.Reason, fmt.Sprintf("exited %d", demo.ExitUsage)) {
		t.Fatalf("job %s: %q, want failed with exit %d", j.State, j.Reason, demo.ExitUsage)
	}
	var logs bytes.Buffer
	if err := renter.Renter().Logs(ctx, j.ID, "", false, &logs); err != nil || !strings.Contains(logs.String(), "usage") {
		t.Fatalf("log of the failed job: %q %v", logs.String(), err)
	}
}

// TestCancelRunningJob: cancelling a running job stops its workload on the
// provider (the lease ends cancelled on both sides, the GPUs are free
// again), and a followed log ends when the work does.
func TestCancelRunningJob(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prov := c.ByRole(node.RoleProvider)[0].Node
	j, err := renter.Renter().Submit([]byte("name: long\nmodule: " + nodetest.DemoModule +
		"\ncommand: [\"print:working\", \"checkpoint:state.txt=saved\", \"hang\"]\ngpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 10m\nbid_window: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobRunning)
	if err := nodetest.WaitFor(ctx, "lease running on the provider", func() bool {
		ls, _ := prov.Store().Leases()
		return len(ls) == 1 && ls[0].State == lease.Running
	}); err != nil {
		t.Fatal(err)
	}
	followed := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		if err := renter.Renter().Logs(ctx, j.ID, "", true, &b); err != nil {
			b.WriteString("error: " + err.Error())
		}
		followed <- b.String()
	}()
	cj, err := renter.Renter().Cancel(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cj.State != lease.JobCancelled {
		t.Fatalf("job after cancel: %s", cj.State)
	}
	ls, _ := prov.Store().Leases()
	if len(ls) != 1 || ls[0].State != lease.Cancelled {
		t.Fatalf("provider lease after cancel: %+v", ls)
	}
	rl := jobLeases(t, renter, cj)
	if rl[0].State != lease.Cancelled || rl[0].OutputCID == "" {
		t.Fatalf("renter lease after cancel: %+v", rl[0])
	}
	select {
	case logs := <-followed:
		if !strings.HasPrefix(logs, "working") {
			t.Errorf("followed log %q", logs)
		}
	case <-ctx.Done():
		t.Fatal("followed log did not end with the work")
	}
	// The stopped workload's checkpoint is its output.
	_, path, err := renter.Renter().Result(ctx, j.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := executortest.TarFiles(t, path)["state.txt"]; got != "saved" {
		t.Errorf("checkpoint = %q", got)
	}
	if err := nodetest.WaitFor(ctx, "GPU free again", func() bool {
		cp := prov.Provider().Capacity()
		return cp != nil && cp.FreeGPUs() == 1
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := renter.Renter().Cancel(ctx, j.ID); err == nil {
		t.Error("cancelling an ended job must fail")
	}
}
