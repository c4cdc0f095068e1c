package renter

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/executor/docker/dockertest"
	"github.com/idlegrid/idlegrid/store"
)

// numcmpImage builds the test verifier numcmp into a FROM-scratch image
// and returns its reference pinned by image ID; the test removes it.
// Without a Docker engine the test skips, unless IDLEGRID_REQUIRE_DOCKER
// is 1 (CI), where it fails.
func numcmpImage(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		_, err = cli.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("IDLEGRID_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker engine required (IDLEGRID_REQUIRE_DOCKER=1): %v", err)
		}
		t.Skipf("no docker engine: %v", err)
	}
	tag, id, err := dockertest.BuildScratchImage(ctx, cli, "./verifiertest/testdata/numcmp", "numcmp", "idlegrid-test/numcmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
		_ = cli.Close()
	})
	return "idlegrid-test/numcmp@" + id
}

// TestOutputJudgeRunsTheImage: a verifier image (job spec `verifier:
// REF@sha256:…`) judges two outputs on the renter's Docker engine, each
// mounted read-only, as the module does on wazero: numbers within the
// tolerance are equivalent (exit 0), outside it not (exit 1, naming the
// file); an image the engine cannot find or pull is no verdict.
func TestOutputJudgeRunsTheImage(t *testing.T) {
	ref := numcmpImage(t)
	dir := t.TempDir()
	tars := map[string]string{}
	for id, content := range map[string]string{"a": "loss 0.5000\nsteps 10\n", "near": "loss 0.5004\nsteps 10\n", "far": "loss 0.61\nsteps 10\n"} {
		tars[id] = writeTar(t, dir, id, map[string]string{"metrics/result.txt": content})
	}
	j := newOutputJudge(nil, filepath.Join(dir, "judge"), nil, "",
		func(_ context.Context, _, leaseID string) (string, error) { return tars[leaseID], nil })
	l := func(id string) *store.Lease { return &store.Lease{ID: id, OutputSize: 1 << 20} }
	v, err := j.judge(t.Context(), "job", ref, l("a"), l("near"))
	if err != nil || !v.Equivalent || v.ExitCode != 0 || !strings.Contains(v.Tail, "equivalent") {
		t.Fatalf("within tolerance: %+v, %v; want equivalent", v, err)
	}
	v, err = j.judge(t.Context(), "job", ref, l("a"), l("far"))
	if err != nil || v.Equivalent || v.ExitCode != 1 || !strings.Contains(v.Tail, "metrics/result.txt") {
		t.Fatalf("outside tolerance: %+v, %v; want exit 1 naming the file", v, err)
	}
	missing := "idlegrid-test/absent@sha256:" + strings.Repeat("0", 64)
	if v, err := j.judge(t.Context(), "job", missing, l("a"), l("near")); err == nil {
		t.Fatalf("an image nobody has gave a verdict: %+v", v)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "judge")); len(entries) != 0 {
		t.Fatalf("judgements left %d work directories", len(entries))
	}
}
