package demo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/executor/wasm"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
)

// A rebuilt demo.wasm must come with its new CID.
func TestCID(t *testing.T) {
	if got := executor.CIDOf(demo.Module()); got != demo.CID {
		t.Fatalf("CIDOf(Module()) = %s, CID = %s: update CID after rebuilding demo.wasm", got, demo.CID)
	}
	m := demo.Module()
	m[0] ^= 0xff
	if executor.CIDOf(demo.Module()) != demo.CID {
		t.Fatal("Module returned the embedded bytes, not a copy")
	}
}

// The module is small enough to embed and rebuild from demo.wat.
func TestModuleSmall(t *testing.T) {
	if n := len(demo.Module()); n == 0 || n > 16<<10 {
		t.Fatalf("len(Module()) = %d", n)
	}
	if _, err := os.Stat("demo.wat"); err != nil {
		t.Fatal(err)
	}
}

// reference computes the module's result file in Go: the same xorshift32
// matrices, product mod 2^32 and FNV-1a over the product's words.
func reference(n int) string {
	fill := func(x uint32) []uint32 {
		m := make([]uint32, n*n)
		for i := range m {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			m[i] = x
		}
		return m
	}
	a, b := fill(0x9E3779B9), fill(0x7F4A7C15)
	c := make([]uint32, n*n)
	for i := range n {
		for k := range n {
			aik := a[i*n+k]
			for j := range n {
				c[i*n+j] += aik * b[k*n+j]
			}
		}
	}
	h := uint32(2166136261)
	for _, v := range c {
		h = (h ^ v) * 16777619
	}
	return fmt.Sprintf("n=%d checksum=%d\n", n, h)
}

func TestExpectedResult(t *testing.T) {
	if got := reference(demo.DefaultN); got != demo.ExpectedResult {
		t.Fatalf("reference(%d) = %q, ExpectedResult = %q", demo.DefaultN, got, demo.ExpectedResult)
	}
}

func newExecutor(t *testing.T) *wasm.Executor {
	t.Helper()
	arts, err := executor.NewDirArtifacts(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if cid, err := arts.PutBytes(demo.Module()); err != nil || cid != demo.CID {
		t.Fatalf("PutBytes = %s, %v; want %s", cid, err, demo.CID)
	}
	e, err := wasm.New(wasm.Config{Dir: t.TempDir(), Artifacts: arts}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

type run struct {
	res   executor.Result
	logs  string
	files map[string]string
}

func runDemo(t *testing.T, e *wasm.Executor, args []string, limits executor.Limits) run {
	t.Helper()
	spec := executor.Spec{Runtime: wasm.Runtime, JobID: "job", LeaseID: "lease", ModuleCID: demo.CID, Args: args, Limits: limits}
	h, res, err := executor.Run(t.Context(), e, spec, 0)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { e.Remove(context.Background(), h) })
	out, err := e.Outputs(t.Context(), h)
	if err != nil {
		t.Fatalf("Outputs: %v", err)
	}
	return run{res: res, logs: executortest.Logs(t, e, h), files: executortest.TarFiles(t, out.Path)}
}

func TestRun(t *testing.T) {
	e := newExecutor(t)
	for _, tc := range []struct {
		args []string
		n    int
	}{
		{nil, demo.DefaultN},
		{demo.Args(1), 1},
		{demo.Args(3), 3},
		{demo.Args(17), 17},
		{[]string{"0064"}, 64},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			r := runDemo(t, e, tc.args, executor.Limits{})
			if !r.res.OK() || r.res.ExitCode != 0 {
				t.Fatalf("result = %+v, logs %q", r.res, r.logs)
			}
			want := reference(tc.n)
			wantLogs := fmt.Sprintf("start: n=%d\nprogress 1/4\nprogress 2/4\nprogress 3/4\nprogress 4/4\ndone: %s", tc.n, want)
			if r.logs != wantLogs {
				t.Errorf("logs = %q, want %q", r.logs, wantLogs)
			}
			if len(r.files) != 1 || r.files[demo.ResultFile] != want {
				t.Errorf("output files = %q, want %s = %q", r.files, demo.ResultFile, want)
			}
			if tc.n == demo.DefaultN {
				if r.files[demo.ResultFile] != demo.ExpectedResult {
					t.Errorf("%s = %q, want ExpectedResult %q", demo.ResultFile, r.files[demo.ResultFile], demo.ExpectedResult)
				}
				t.Logf("default N=%d ran in %v", tc.n, r.res.FinishedAt.Sub(r.res.StartedAt))
			}
		})
	}
}

func TestBadN(t *testing.T) {
	e := newExecutor(t)
	for _, args := range [][]string{
		{""}, {"0"}, {"-1"}, {"+5"}, {" 5"}, {"12x"}, {"0x10"},
		{fmt.Sprint(demo.MaxN + 1)}, {"99999999999999999999999"}, {"4294967297"},
		{"5", "5"},
	} {
		t.Run(fmt.Sprintf("%q", args), func(t *testing.T) {
			r := runDemo(t, e, args, executor.Limits{})
			if r.res.ExitCode != demo.ExitUsage || r.res.Reason != executor.ReasonFailed {
				t.Fatalf("result = %+v, logs %q", r.res, r.logs)
			}
			if !strings.HasPrefix(r.logs, "demo: usage:") || len(r.files) != 0 {
				t.Errorf("logs %q, files %q", r.logs, r.files)
			}
		})
	}
}

// The largest N runs in 48 MiB of matrices; below that memory limit the
// module's refused grow reads as "oom".
func TestMemoryLimit(t *testing.T) {
	e := newExecutor(t)
	r := runDemo(t, e, demo.Args(demo.MaxN), executor.Limits{MemoryMiB: 16, MaxDuration: time.Minute})
	if r.res.Reason != executor.ReasonOOM || !strings.Contains(r.logs, "out of memory") {
		t.Fatalf("result = %+v, logs %q", r.res, r.logs)
	}
}
