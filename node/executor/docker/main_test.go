package docker

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/docker/dockertest"
)

// Shared per test run: the test program is built and packed into an image
// once. Other test packages may use the engine at the same time, so every
// name here is random and everything made is removed.
var (
	testCli   *client.Client
	testImage string // idlegrid-test/prog@sha256:<image id>
	engineErr error  // no engine: tests skip (or fail, see needEngine)
	buildErr  error  // engine but no image: tests fail
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var tag string
	testCli, engineErr = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if engineErr == nil {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, engineErr = testCli.Ping(pctx)
		pcancel()
	}
	if engineErr == nil {
		tag, buildErr = buildImage(ctx)
	}
	code := m.Run()
	if tag != "" {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		if _, err := testCli.ImageRemove(rctx, tag, image.RemoveOptions{PruneChildren: true}); err != nil {
			fmt.Fprintln(os.Stderr, "removing test image:", err)
		}
	}
	return code
}

// buildImage builds testdata/prog into a FROM-scratch image and returns
// the tag it gave it.
func buildImage(ctx context.Context) (string, error) {
	tag, id, err := dockertest.BuildScratchImage(ctx, testCli, "./testdata/prog", "prog", "idlegrid-test/prog")
	if err != nil {
		return "", err
	}
	testImage = "idlegrid-test/prog@" + id
	return tag, nil
}

// needEngine skips t when no Docker engine is reachable, unless
// IDLEGRID_REQUIRE_DOCKER=1 (CI), where a missing engine fails it.
func needEngine(t *testing.T) {
	t.Helper()
	if engineErr != nil {
		if os.Getenv("IDLEGRID_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker engine required (IDLEGRID_REQUIRE_DOCKER=1) but not reachable: %v", engineErr)
		}
		t.Skipf("no docker engine: %v", engineErr)
	}
	if buildErr != nil {
		t.Fatalf("building the test image: %v", buildErr)
	}
}

// newExecutor returns an executor of its own instance, closed at cleanup,
// when every container of that instance is also removed (Close leaves them
// running by design).
func newExecutor(t *testing.T, mod func(*Config)) *Executor {
	t.Helper()
	needEngine(t)
	cfg := Config{Dir: t.TempDir(), Instance: "test-" + strings.ToLower(rand.Text())}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		purgeInstance(t, cfg.Instance)
	})
	return e
}

// purgeInstance force-removes every container of instance.
func purgeInstance(t *testing.T, instance string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := testCli.ContainerList(ctx, container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", labelInstance+"="+instance)),
	})
	if err != nil {
		t.Errorf("list containers: %v", err)
		return
	}
	for _, c := range list {
		if err := testCli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove container %s: %v", c.Names, err)
		}
	}
}

func progSpec(args ...string) executor.Spec {
	return executor.Spec{Runtime: Runtime, JobID: "job", LeaseID: "lease", Image: testImage, Args: args}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startSpec prepares and starts spec, removing it at cleanup.
func startSpec(t *testing.T, e *Executor, spec executor.Spec) executor.Handle {
	t.Helper()
	ctx := testCtx(t)
	h, err := e.Prepare(ctx, spec)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Remove(context.Background(), h); err != nil && !errors.Is(err, executor.ErrUnknownHandle) &&
			!errors.Is(err, executor.ErrClosed) {
			t.Errorf("Remove: %v", err)
		}
	})
	if err := e.Start(ctx, h); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

func waitResult(t *testing.T, e *Executor, h executor.Handle) executor.Result {
	t.Helper()
	res, err := e.Wait(testCtx(t), h)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return res
}

// waitForLine follows h's log until a line starts with prefix and returns it.
func waitForLine(t *testing.T, e *Executor, h executor.Handle, prefix string) string {
	t.Helper()
	rc, err := e.Logs(testCtx(t), h, true)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
		if err != nil {
			t.Fatalf("log ended before a line starting %q: %v", prefix, err)
		}
	}
}
