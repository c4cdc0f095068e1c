package docker

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/idlegrid/idlegrid/node/executor"
)

// A daemon restart: executor A starts workloads and goes away, B comes up
// over the same Dir and Instance and takes them over.
func TestReconcile(t *testing.T) {
	needEngine(t)
	dir := t.TempDir()
	instance := "test-reattach-" + strings.TrimPrefix(string(newHandle()), handlePrefix)
	a := newExecutor(t, func(c *Config) { c.Dir, c.Instance = dir, instance })
	other := newExecutor(t, nil) // another daemon on the same engine

	kept := startSpec(t, a, progSpec("hang"))
	waitForLine(t, a, kept, "hanging")
	deadlineSpec := progSpec("hang")
	deadlineSpec.Limits.MaxDuration = 4 * time.Second
	overdue := startSpec(t, a, deadlineSpec)
	orphan := startSpec(t, a, progSpec("hang"))
	foreign := startSpec(t, other, progSpec("hang"))
	if err := a.Close(); err != nil {
		t.Fatalf("Close A: %v", err)
	}
	if _, err := a.Wait(testCtx(t), kept); err == nil {
		t.Fatal("Wait on a closed executor succeeded")
	}

	b := newExecutor(t, func(c *Config) { c.Dir, c.Instance = dir, instance })
	gone := executor.Handle(handlePrefix + strings.Repeat("a", 26))
	missing, err := b.Reconcile(testCtx(t), []executor.Handle{kept, overdue, gone})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if !slices.Equal(missing, []executor.Handle{gone}) {
		t.Errorf("missing = %v, want [%s]", missing, gone)
	}

	// The untracked container of this instance is gone, with its files;
	// the other instance's is untouched.
	ctx := testCtx(t)
	if _, err := testCli.ContainerInspect(ctx, string(orphan)); !cerrdefs.IsNotFound(err) {
		t.Errorf("orphan container: inspect = %v, want not found", err)
	}
	if _, err := os.Stat(b.workDir(orphan)); !os.IsNotExist(err) {
		t.Errorf("orphan work dir: stat = %v, want not exist", err)
	}
	if ins, err := testCli.ContainerInspect(ctx, string(foreign)); err != nil || !ins.State.Running {
		t.Errorf("other instance's container: %v (running %v), want running", err, err == nil && ins.State.Running)
	}

	// B serves the reattached workloads: logs, stop, wait, outputs.
	if line := waitForLine(t, b, kept, "hanging"); line != "hanging" {
		t.Errorf("log line = %q", line)
	}
	if err := b.Stop(ctx, kept, 10*time.Second); err != nil {
		t.Fatalf("Stop via B: %v", err)
	}
	if res := waitResult(t, b, kept); res.Reason != executor.ReasonStopped {
		t.Errorf("kept: result = %+v, want stopped", res)
	}
	if _, err := b.Outputs(ctx, kept); err != nil {
		t.Errorf("Outputs via B: %v", err)
	}
	// B enforces the deadline A armed.
	if res := waitResult(t, b, overdue); res.Reason != executor.ReasonTimeout {
		t.Errorf("overdue: result = %+v, want timeout", res)
	}
	if err := b.Remove(context.Background(), kept); err != nil {
		t.Errorf("Remove via B: %v", err)
	}
	if _, err := testCli.ContainerInspect(ctx, string(kept)); !cerrdefs.IsNotFound(err) {
		t.Errorf("removed container: inspect = %v, want not found", err)
	}
}
