package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
)

// Shared per test run: building Go to wasm and compiling the result are
// the slow parts, so both happen once (the compilation cache carries the
// machine code across the executors the tests create). The demo module is
// embedded, so it is there even without a Go toolchain.
var (
	testArtifacts *executor.DirArtifacts
	testCacheDir  string
	testprogCID   string
	demoCID       string
	buildErr      error
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "idlegrid-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	testCacheDir = filepath.Join(tmp, "cache")
	if testArtifacts, err = executor.NewDirArtifacts(filepath.Join(tmp, "artifacts")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if demoCID, err = testArtifacts.PutBytes(demo.Module()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buildErr = buildModules(filepath.Join(tmp, "bin"))
	return m.Run()
}

// buildModules compiles the Go test program to wasip1 and stores it as an
// artifact. Without a Go toolchain the tests that need it skip.
func buildModules(dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go toolchain: %w", err)
	}
	bin := filepath.Join(dir, "testprog.wasm")
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", bin, "./testdata/testprog")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	mod, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	testprogCID, err = testArtifacts.PutBytes(mod)
	return err
}

func needModules(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Skipf("test program not built: %v", buildErr)
	}
}

// newExecutor returns an executor over the shared artifacts and cache,
// closed at cleanup.
func newExecutor(t *testing.T, mod func(*Config)) *Executor {
	t.Helper()
	cfg := Config{Dir: t.TempDir(), Artifacts: testArtifacts, CacheDir: testCacheDir}
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
	})
	return e
}

// runSpec runs spec to the end and returns its handle and result.
func runSpec(t *testing.T, e *Executor, spec executor.Spec) (executor.Handle, executor.Result) {
	t.Helper()
	ctx := t.Context()
	h, res, err := executor.Run(ctx, e, spec, 0)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { e.Remove(context.Background(), h) })
	return h, res
}

func progSpec(args ...string) executor.Spec {
	return executor.Spec{Runtime: Runtime, JobID: "job", LeaseID: "lease", ModuleCID: testprogCID, Args: args}
}
