package docker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
)

func TestSuite(t *testing.T) {
	needEngine(t)
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

func TestNewNoEngine(t *testing.T) {
	host := "unix://" + t.TempDir() + "/no-docker.sock"
	_, err := New(Config{Host: host, Dir: t.TempDir()}, nil)
	if !errors.Is(err, ErrNoEngine) {
		t.Fatalf("New = %v, want ErrNoEngine", err)
	}
	for _, want := range []string{host, "install Docker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// probe runs the probe program and returns its report.
func probe(t *testing.T, e *Executor, spec executor.Spec) Probe {
	t.Helper()
	h := startSpec(t, e, spec)
	if res := waitResult(t, e, h); !res.OK() {
		t.Fatalf("probe result = %+v", res)
	}
	line := waitForLine(t, e, h, "PROBE ")
	var p Probe
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "PROBE ")), &p); err != nil {
		t.Fatalf("probe report %q: %v", line, err)
	}
	t.Logf("probe: %+v", p)
	return p
}

// Probe mirrors testdata/prog's report.
type Probe struct {
	UID, GID   int
	Dial       string
	WriteRoot  string
	WriteTmp   string
	WriteOut   string
	Chown      string
	CapEff     string
	CapBnd     string
	NoNewPrivs string
	Ifaces     []string
}

func TestHardening(t *testing.T) {
	needEngine(t)
	const noCaps = "0000000000000000"
	check := func(t *testing.T, p Probe) {
		t.Helper()
		if !strings.Contains(p.Dial, "network is unreachable") {
			t.Errorf("dial out: %q, want network is unreachable", p.Dial)
		}
		if !strings.Contains(p.WriteRoot, "read-only file system") {
			t.Errorf("write to /: %q, want read-only file system", p.WriteRoot)
		}
		if p.WriteTmp != "" || p.WriteOut != "" {
			t.Errorf("write to /tmp: %q, /out: %q; want both writable", p.WriteTmp, p.WriteOut)
		}
		if !strings.Contains(p.Chown, "operation not permitted") {
			t.Errorf("chown: %q, want operation not permitted", p.Chown)
		}
		if p.CapEff != noCaps || p.CapBnd != noCaps {
			t.Errorf("CapEff %s, CapBnd %s; want none", p.CapEff, p.CapBnd)
		}
		if p.NoNewPrivs != "1" {
			t.Errorf("NoNewPrivs = %q, want 1", p.NoNewPrivs)
		}
		if !slices.Equal(p.Ifaces, []string{"lo"}) {
			t.Errorf("interfaces %v, want only lo", p.Ifaces)
		}
	}
	t.Run("Default", func(t *testing.T) {
		t.Parallel()
		p := probe(t, newExecutor(t, nil), progSpec("probe"))
		check(t, p)
		if p.UID != 65534 || p.GID != 65534 {
			t.Errorf("runs as %d:%d, want 65534:65534 for an image without USER", p.UID, p.GID)
		}
	})
	t.Run("AllowRoot", func(t *testing.T) {
		t.Parallel()
		// Root, yet without capabilities: it still cannot chown.
		p := probe(t, newExecutor(t, func(c *Config) { c.AllowRoot = true }), progSpec("probe"))
		check(t, p)
		if p.UID != 0 {
			t.Errorf("runs as %d, want root with AllowRoot", p.UID)
		}
	})
}

// Egress is the default bridge: an interface with a route out. Whether
// the route reaches anything depends on the host, so only the interface is
// checked.
func TestEgress(t *testing.T) {
	e := newExecutor(t, nil)
	spec := progSpec("probe")
	spec.Limits.Network = executor.NetworkEgress
	p := probe(t, e, spec)
	if !slices.Contains(p.Ifaces, "eth0") {
		t.Errorf("interfaces %v, want eth0 with egress", p.Ifaces)
	}
	if strings.Contains(p.Dial, "network is unreachable") {
		t.Errorf("dial out with egress: %q", p.Dial)
	}
}

// Following the log of a container that has not started yet ends when ctx
// does, or returns what there is; it must not outlive ctx.
func TestLogsBeforeStart(t *testing.T) {
	e := newExecutor(t, nil)
	ctx := testCtx(t)
	h, err := e.Prepare(ctx, progSpec("hello"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer e.Remove(context.Background(), h)
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rc, err := e.Logs(lctx, h, true)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	t.Logf("follow before start: %q, %v", b, err)
	if len(b) != 0 {
		t.Errorf("log before start = %q", b)
	}
}

func TestOOM(t *testing.T) {
	e := newExecutor(t, nil)
	spec := progSpec("oom", "256")
	spec.Limits.MemoryMiB = 32
	res := waitResult(t, e, startSpec(t, e, spec))
	if res.Reason != executor.ReasonOOM {
		t.Fatalf("result = %+v, want oom", res)
	}
}

// A preempted workload gets SIGTERM and its grace to save a checkpoint,
// which reaches the outputs.
func TestStopCheckpoint(t *testing.T) {
	e := newExecutor(t, nil)
	h := startSpec(t, e, progSpec("trap"))
	waitForLine(t, e, h, "ready")
	if err := e.Stop(testCtx(t), h, 20*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	res := waitResult(t, e, h)
	if res.Reason != executor.ReasonStopped || res.ExitCode != -1 {
		t.Fatalf("result = %+v, want stopped/-1", res)
	}
	if d := res.FinishedAt.Sub(res.StartedAt); d > 15*time.Second {
		t.Errorf("took %v to stop: SIGTERM did not reach the workload, the kill ended it", d)
	}
	out, err := e.Outputs(testCtx(t), h)
	if err != nil {
		t.Fatalf("Outputs: %v", err)
	}
	if got := executortest.TarFiles(t, out.Path)["checkpoint.txt"]; got != "step 42\n" {
		t.Errorf("checkpoint.txt = %q", got)
	}
}

func TestPrepareRefuses(t *testing.T) {
	e := newExecutor(t, func(c *Config) { c.MaxMemoryMiB = 512 })
	missing := "idlegrid-test/none@sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		name string
		mod  func(*executor.Spec)
		want error
	}{
		{"Tag", func(s *executor.Spec) { s.Image = "idlegrid-test/prog:latest" }, executor.ErrInvalidSpec},
		{"BareDigest", func(s *executor.Spec) { s.Image = strings.TrimPrefix(testImage, "idlegrid-test/prog@") }, executor.ErrInvalidSpec},
		{"Module", func(s *executor.Spec) { s.ModuleCID = "bafkrei" }, executor.ErrInvalidSpec},
		{"Memory", func(s *executor.Spec) { s.Limits.MemoryMiB = 1024 }, executor.ErrLimit},
		{"GPUComma", func(s *executor.Spec) { s.Limits.GPUs = []string{"GPU-a,GPU-b"} }, executor.ErrInvalidSpec},
		{"Runtime", func(s *executor.Spec) { s.Runtime = "wasm" }, executor.ErrUnsupported},
		{"Missing", func(s *executor.Spec) { s.Image = missing }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := progSpec("hello")
			c.mod(&spec)
			h, err := e.Prepare(testCtx(t), spec)
			if err == nil {
				e.Remove(testCtx(t), h)
				t.Fatal("Prepare succeeded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Prepare = %v, want %v", err, c.want)
			}
			t.Log(err)
		})
	}
}

// Artifact names the image ID the container was created from, also for a
// container found after a restart (asked of the engine).
func TestArtifactIsTheImageID(t *testing.T) {
	e := newExecutor(t, nil)
	ctx := testCtx(t)
	h, err := e.Prepare(ctx, progSpec("hello"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer e.Remove(context.Background(), h)
	_, id, _ := strings.Cut(testImage, "@")
	if a, err := e.Artifact(ctx, h); err != nil || a != id {
		t.Fatalf("Artifact = %q, %v; want %s", a, err, id)
	}
	w, err := e.workloads.Get(h)
	if err != nil {
		t.Fatal(err)
	}
	w.image = "" // as Reconcile leaves it
	if a, err := e.Artifact(ctx, h); err != nil || a != id {
		t.Fatalf("Artifact after a restart = %q, %v; want %s", a, err, id)
	}
}
