package renter

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/renter/verifiertest"
	"github.com/idlegrid/idlegrid/store"
)

// TestVerifierVerdictsSettleReplicas: replicas whose outputs differ are
// judged by the job's verifier against the largest group's output. All
// judged equivalent: the job completes and no lease is blamed. One judged
// different (or not judged at all): the job ends unverified on the groups
// the verdicts left, blaming the minority, or both of two.
func TestVerifierVerdictsSettleReplicas(t *testing.T) {
	const x, y, z = "bafkreix", "bafkreiy", "bafkreiz"
	for _, tc := range []struct {
		name       string
		outputs    []string
		equivalent map[string]bool // output judged against x: equivalent; absent: the judge fails
		state      string
		blamed     []bool
	}{
		{"two equivalent", []string{x, y}, map[string]bool{y: true}, lease.JobCompleted, []bool{false, false}},
		{"two different", []string{x, y}, map[string]bool{y: false}, lease.JobUnverified, []bool{true, true}},
		{"no verdict", []string{x, y}, map[string]bool{}, lease.JobUnverified, []bool{true, true}},
		{"three, one different", []string{x, y, z}, map[string]bool{y: true, z: false}, lease.JobUnverified, []bool{false, false, true}},
		{"three equivalent", []string{x, y, x}, map[string]bool{y: true}, lease.JobCompleted, []bool{false, false, false}},
	} {
		r, _, _ := newRenter(t, 0)
		jobID := "job-" + strings.ReplaceAll(tc.name, " ", "-")
		var ran []*store.Lease
		job := &store.Job{ID: jobID, State: lease.JobRunning}
		for i, o := range tc.outputs {
			l := &store.Lease{ID: fmt.Sprintf("lease-%d", i), JobID: jobID, Side: lease.SideRenter, Provider: fmt.Sprintf("provider-%d", i),
				State: lease.Completed, OutputCID: o, OutputSize: 10}
			if err := r.db.PutLease(l); err != nil {
				t.Fatal(err)
			}
			ran, job.Leases = append(ran, l), append(job.Leases, l.ID)
		}
		if err := r.jobs.create(job); err != nil {
			t.Fatal(err)
		}
		judged := 0
		r.driver.judgeOutputs = func(_ context.Context, _, module string, a, b *store.Lease) (outputVerdict, error) {
			judged++
			if a.OutputCID != x || module != "bafkreiverifier" {
				t.Fatalf("%s: judged against %s with %s, want the largest group's output %s", tc.name, a.OutputCID, module, x)
			}
			eq, ok := tc.equivalent[b.OutputCID]
			if !ok {
				return outputVerdict{}, errors.New("no module")
			}
			if eq {
				return outputVerdict{Equivalent: true, Tail: "equivalent within 0.001"}, nil
			}
			return outputVerdict{ExitCode: 1, Ended: "exit code 1", Tail: "differ: result.txt"}, nil
		}
		groups := auction.GroupOutputs(tc.outputs)
		if !r.driver.judgeReplicas(t.Context(), jobID, "bafkreiverifier", ran, groups, "not deterministic") {
			t.Fatalf("%s: nothing settled", tc.name)
		}
		j, err := r.db.GetJob(jobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != tc.state || judged != len(groups)-1 {
			t.Fatalf("%s: job %s (%s) after %d verdicts, want %s after %d", tc.name, j.State, j.Reason, judged, tc.state, len(groups)-1)
		}
		verdicts := 0
		for _, ev := range j.Events {
			if ev.Kind == "verifier" {
				verdicts++
			}
		}
		if verdicts != judged {
			t.Fatalf("%s: %d verifier events for %d verdicts: %+v", tc.name, verdicts, judged, j.Events)
		}
		if tc.state == lease.JobCompleted && (!hasEvent(j, "replicas-equivalent") || !strings.Contains(j.Reason, "lease-"+fmt.Sprint(len(ran)-1))) {
			t.Fatalf("%s: reason %q, want the equivalence and the lease served (the last)", tc.name, j.Reason)
		}
		for i, l := range ran {
			cur, err := r.db.GetLease(l.ID)
			if err != nil {
				t.Fatal(err)
			}
			if blamed := cur.State == lease.Unverified; blamed != tc.blamed[i] {
				t.Fatalf("%s: lease %d %s, want blamed %v", tc.name, i, cur.State, tc.blamed[i])
			}
		}
	}
}

func hasEvent(j *store.Job, kind string) bool {
	for _, ev := range j.Events {
		if ev.Kind == kind {
			return true
		}
	}
	return false
}

// TestOutputJudgeRunsTheModule: the test verifier numcmp, run on wazero
// with two outputs unpacked read-only: numbers within its tolerance are
// equivalent (exit 0), outside it they are not (exit 1, saying where),
// and a module the renter does not hold is no verdict.
func TestOutputJudgeRunsTheModule(t *testing.T) {
	mod, err := verifiertest.Module()
	if err != nil {
		t.Skipf("numcmp not built: %v", err)
	}
	dir := t.TempDir()
	arts, err := executor.NewDirArtifacts(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	module, err := arts.PutBytes(mod)
	if err != nil {
		t.Fatal(err)
	}
	tars := map[string]string{}
	for id, content := range map[string]string{"a": "loss 0.5000\nsteps 10\n", "near": "loss 0.5004\nsteps 10\n", "far": "loss 0.61\nsteps 10\n"} {
		tars[id] = writeTar(t, dir, id, map[string]string{"metrics/result.txt": content})
	}
	j := newOutputJudge(nil, filepath.Join(dir, "judge"), arts, "",
		func(_ context.Context, _, leaseID string) (string, error) { return tars[leaseID], nil })
	l := func(id string) *store.Lease { return &store.Lease{ID: id, OutputSize: 1 << 20} }
	v, err := j.judge(t.Context(), "job", module, l("a"), l("near"))
	if err != nil || !v.Equivalent || v.ExitCode != 0 || !strings.Contains(v.Tail, "equivalent") {
		t.Fatalf("within tolerance: %+v, %v; want equivalent", v, err)
	}
	v, err = j.judge(t.Context(), "job", module, l("a"), l("far"))
	if err != nil || v.Equivalent || v.ExitCode != 1 || !strings.Contains(v.Tail, "metrics/result.txt") {
		t.Fatalf("outside tolerance: %+v, %v; want exit 1 naming the file", v, err)
	}
	if _, err := j.judge(t.Context(), "job", "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", l("a"), l("near")); err == nil {
		t.Fatal("a module not held here gave a verdict")
	}
	bad := writeTar(t, dir, "escape", map[string]string{"../x": "1"})
	if err := unpackOutput(bad, filepath.Join(dir, "unpacked"), 100); err == nil {
		t.Fatal("unpacked an entry outside the output")
	}
	if err := unpackOutput(tars["a"], filepath.Join(dir, "small"), 3); err == nil {
		t.Fatal("unpacked more than the lease's output size")
	}
}

func writeTar(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	p := filepath.Join(dir, name+".tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for n, c := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSubmitNeedsTheVerifierModule: a job naming a verifier this renter
// does not hold is refused at submit, saying how to add it.
func TestSubmitNeedsTheVerifierModule(t *testing.T) {
	r := runningRenter(t)
	const missing = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
	spec := fmt.Appendf(submitSpec("judged"), "replicas: 2\nverifier: %s\n", missing)
	_, err := r.Submit(spec)
	if !errors.Is(err, ErrMissingArtifact) || !strings.Contains(err.Error(), "verifier") || !strings.Contains(err.Error(), "artifact add") {
		t.Fatalf("submit with a verifier not held: %v, want ErrMissingArtifact naming the verifier", err)
	}
}
