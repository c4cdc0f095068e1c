package wasm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
)

func TestSuite(t *testing.T) {
	needModules(t)
	executortest.Suite{
		New: func(t *testing.T) executor.Executor { return newExecutor(t, nil) },
		Spec: func(t *testing.T, p executortest.Program) executor.Spec {
			switch p {
			case executortest.Hello:
				return progSpec("hello")
			case executortest.Exit3:
				return progSpec("exit", "3")
			case executortest.Hang:
				return progSpec("hang")
			case executortest.Echo:
				return progSpec("echo")
			}
			t.Fatalf("unknown program %d", p)
			return executor.Spec{}
		},
	}.Run(t)
}

// Hand-assembled modules, since wazero has no text-format compiler. Each is
// a WASI command: one func type () -> (), one function exported as _start.
var (
	wasmHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	typeSec    = []byte{0x01, 0x04, 0x01, 0x60, 0x00, 0x00} // (type (func))
	funcSec    = []byte{0x03, 0x02, 0x01, 0x00}             // func 0 has type 0
	startExp   = []byte{0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00}
	emptyCode  = []byte{0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b}                // nop body
	trapCode   = []byte{0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b}          // unreachable
	oneMemSec  = []byte{0x05, 0x03, 0x01, 0x00, 0x01}                      // (memory 1)
	bigMemSec  = []byte{0x05, 0x04, 0x01, 0x00, 0x80, 0x01}                // (memory 128) = 8 MiB
	noStartExp = []byte{0x07, 0x07, 0x01, 0x03, 'r', 'u', 'n', 0x00, 0x00} // exported as "run"
	// loop { if (memory.grow 16) == -1 { unreachable } }: grows 1 MiB at a
	// time until refused, then traps.
	growCode = []byte{0x0a, 0x14, 0x01, 0x12, 0x00,
		0x03, 0x40, // loop
		0x41, 0x10, 0x40, 0x00, // i32.const 16; memory.grow
		0x41, 0x7f, 0x46, // i32.const -1; i32.eq
		0x04, 0x40, 0x00, 0x0b, // if unreachable end
		0x0c, 0x00, // br 0
		0x0b, 0x0b}
)

func module(sections ...[]byte) []byte {
	return bytes.Join(append([][]byte{wasmHeader}, sections...), nil)
}

func putModule(t *testing.T, bin []byte) string {
	t.Helper()
	id, err := testArtifacts.PutBytes(bin)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func modSpec(id string) executor.Spec {
	return executor.Spec{Runtime: Runtime, ModuleCID: id}
}

func TestHandModules(t *testing.T) {
	e := newExecutor(t, nil)
	t.Run("Nop", func(t *testing.T) {
		_, res := runSpec(t, e, modSpec(putModule(t, module(typeSec, funcSec, startExp, emptyCode))))
		if !res.OK() || res.ExitCode != 0 {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		_, res := runSpec(t, e, modSpec(putModule(t, module(typeSec, funcSec, startExp, trapCode))))
		if res.Reason != executor.ReasonTrap || res.ExitCode != -1 || !strings.Contains(res.Message, "unreachable") {
			t.Fatalf("result = %+v, want trap/unreachable", res)
		}
	})
	t.Run("GrowUntilRefused", func(t *testing.T) {
		spec := modSpec(putModule(t, module(typeSec, funcSec, oneMemSec, startExp, growCode)))
		spec.Limits.MemoryMiB = 4
		_, res := runSpec(t, e, spec)
		if res.Reason != executor.ReasonOOM {
			t.Fatalf("result = %+v, want oom", res)
		}
	})
	t.Run("InitialMemoryOverLimit", func(t *testing.T) {
		spec := modSpec(putModule(t, module(typeSec, funcSec, bigMemSec, startExp, emptyCode)))
		spec.Limits.MemoryMiB = 4
		if _, err := e.Prepare(t.Context(), spec); !errors.Is(err, executor.ErrLimit) {
			t.Fatalf("Prepare = %v, want ErrLimit", err)
		}
	})
	t.Run("NotACommand", func(t *testing.T) {
		spec := modSpec(putModule(t, module(typeSec, funcSec, noStartExp, emptyCode)))
		if _, err := e.Prepare(t.Context(), spec); !errors.Is(err, executor.ErrUnsupported) {
			t.Fatalf("Prepare = %v, want ErrUnsupported", err)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		if _, err := e.Prepare(t.Context(), modSpec(putModule(t, []byte("not wasm")))); err == nil {
			t.Fatal("Prepare of garbage succeeded")
		}
	})
}

func TestPrepareRefuses(t *testing.T) {
	e := newExecutor(t, func(c *Config) { c.MaxMemoryMiB = 512 })
	nop := putModule(t, module(typeSec, funcSec, startExp, emptyCode))
	missing := executor.CIDOf([]byte("never stored"))

	// A store that serves the wrong bytes under a CID.
	bad := filepath.Join(t.TempDir(), "artifacts")
	badStore, err := executor.NewDirArtifacts(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, nop), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	tampered := newExecutor(t, func(c *Config) { c.Artifacts = badStore })

	cases := []struct {
		name string
		ex   *Executor
		spec executor.Spec
		want error
	}{
		{"GPUs", e, func() executor.Spec { s := modSpec(nop); s.Limits.GPUs = []string{"GPU-1"}; return s }(), executor.ErrUnsupported},
		{"MemoryOverMax", e, func() executor.Spec { s := modSpec(nop); s.Limits.MemoryMiB = 1024; return s }(), executor.ErrLimit},
		{"Command", e, func() executor.Spec { s := modSpec(nop); s.Command = []string{"sh"}; return s }(), executor.ErrInvalidSpec},
		{"NoModule", e, modSpec(""), executor.ErrInvalidSpec},
		{"BadCID", e, modSpec("bafy-not-a-cid"), executor.ErrInvalidCID},
		{"Missing", e, modSpec(missing), executor.ErrNotFound},
		{"Tampered", tampered, modSpec(nop), executor.ErrCIDMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.ex.Prepare(t.Context(), c.spec); !errors.Is(err, c.want) {
				t.Fatalf("Prepare = %v, want %v", err, c.want)
			}
		})
	}
}

func TestGoPrograms(t *testing.T) {
	needModules(t)
	e := newExecutor(t, nil)
	t.Run("Args", func(t *testing.T) {
		t.Parallel()
		h, res := runSpec(t, e, progSpec("echo", "a b", "c"))
		if !res.OK() {
			t.Fatalf("result = %+v", res)
		}
		logs := executortest.Logs(t, e, h)
		for _, want := range []string{"arg0=" + testprogCID, "arg1=echo", "arg2=a b", "arg3=c"} {
			if !strings.Contains(logs, want+"\n") {
				t.Errorf("logs = %q, want %q", logs, want)
			}
		}
	})
	t.Run("Panic", func(t *testing.T) {
		t.Parallel()
		h, res := runSpec(t, e, progSpec("panic"))
		// The Go runtime reports a panic by exiting 2 after printing it.
		if res.Reason != executor.ReasonFailed || res.ExitCode != 2 {
			t.Fatalf("result = %+v, want failed/2", res)
		}
		if logs := executortest.Logs(t, e, h); !strings.Contains(logs, "testprog panics") {
			t.Errorf("logs = %q", logs)
		}
	})
	t.Run("AllocWithinLimit", func(t *testing.T) {
		t.Parallel()
		spec := progSpec("alloc", "16")
		spec.Limits.MemoryMiB = 128
		if _, res := runSpec(t, e, spec); !res.OK() {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("OOM", func(t *testing.T) {
		t.Parallel()
		spec := progSpec("alloc", "256")
		spec.Limits.MemoryMiB = 64
		h, res := runSpec(t, e, spec)
		if res.Reason != executor.ReasonOOM {
			t.Fatalf("result = %+v, want oom; logs %q", res, executortest.Logs(t, e, h))
		}
	})
	t.Run("SleepTimeout", func(t *testing.T) {
		t.Parallel()
		spec := progSpec("sleep")
		spec.Limits.MaxDuration = 300 * time.Millisecond
		_, res := runSpec(t, e, spec)
		if res.Reason != executor.ReasonTimeout {
			t.Fatalf("result = %+v, want timeout", res)
		}
		if d := res.FinishedAt.Sub(res.StartedAt); d > 10*time.Second {
			t.Errorf("sleeping guest took %v to time out", d)
		}
	})
	t.Run("DiskQuota", func(t *testing.T) {
		t.Parallel()
		spec := progSpec("write", "8")
		spec.Limits.DiskMiB = 2
		h, res := runSpec(t, e, spec)
		if res.Reason != executor.ReasonFailed || res.ExitCode != 3 {
			t.Fatalf("result = %+v, want failed/3 (write refused); logs %q", res, executortest.Logs(t, e, h))
		}
		out, err := e.Outputs(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if out.Size > 3<<20 {
			t.Errorf("output %d bytes, over the 2 MiB quota", out.Size)
		}
	})
	t.Run("NoEscape", func(t *testing.T) {
		t.Parallel()
		h, res := runSpec(t, e, progSpec("escape"))
		if !res.OK() {
			t.Fatalf("result = %+v; logs %q", res, executortest.Logs(t, e, h))
		}
	})
	t.Run("OutputTree", func(t *testing.T) {
		t.Parallel()
		h, _ := runSpec(t, e, progSpec("hello"))
		out, err := e.Outputs(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		files := executortest.TarFiles(t, out.Path)
		if files["sub/dir/data.bin"] != "\x00\x01\x02\x03" || files["hello.txt"] != "hello\n" {
			t.Errorf("tar files = %q", files)
		}
	})
}

// Two runs of the same deterministic module give the same output CID, on
// separate executors: what lets a renter compare providers. The module is
// the embedded demo, run as the devnet runs it (no args).
func TestDemoReproducible(t *testing.T) {
	var cids []string
	for range 2 {
		e := newExecutor(t, nil)
		spec := executor.Spec{Runtime: Runtime, ModuleCID: demoCID}
		h, res := runSpec(t, e, spec)
		logs := executortest.Logs(t, e, h)
		if !res.OK() || !strings.Contains(logs, "progress 4/4\n") || !strings.HasSuffix(logs, "done: "+demo.ExpectedResult) {
			t.Fatalf("result = %+v, logs %q", res, logs)
		}
		out, err := e.Outputs(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if files := executortest.TarFiles(t, out.Path); len(files) != 1 || files[demo.ResultFile] != demo.ExpectedResult {
			t.Fatalf("output files = %q, want %s = %q", files, demo.ResultFile, demo.ExpectedResult)
		}
		cids = append(cids, out.CID)
	}
	if cids[0] != cids[1] {
		t.Errorf("output CIDs differ: %v", cids)
	}
}

func TestCompilationCacheFilled(t *testing.T) {
	needModules(t)
	e := newExecutor(t, nil)
	h, err := e.Prepare(t.Context(), progSpec("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Remove(t.Context(), h)
	entries, err := os.ReadDir(testCacheDir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache dir %s: %d entries, %v", testCacheDir, len(entries), err)
	}
}
