package executortest

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Program is a behaviour the suite needs every runtime to provide.
type Program int

// Programs the suite runs. Suite.Spec builds a Spec that runs each in the
// implementation's own runtime.
const (
	// Hello prints HelloText to stdout, writes HelloFile containing
	// HelloFileData to its output directory and exits 0.
	Hello Program = iota
	// Exit3 exits with code 3.
	Exit3
	// Hang prints HangText and then runs (busy or blocked) until stopped.
	Hang
	// Echo copies stdin to stdout and then prints the value of the
	// environment variable EchoEnv on a line of its own.
	Echo
)

// What the programs print and write.
const (
	HelloText     = "hello from idlegrid"
	HelloFile     = "hello.txt"
	HelloFileData = "hello\n"
	HangText      = "hanging"
	EchoEnv       = "IDLEGRID_TEST"
)

// Suite is the conformance suite for an Executor.
type Suite struct {
	// New returns a fresh executor; the suite does not close it (register
	// a t.Cleanup).
	New func(t *testing.T) executor.Executor
	// Spec returns a spec that runs p, with the runtime set and no limits.
	Spec func(t *testing.T, p Program) executor.Spec
}

// Run runs every case as a subtest.
func (s Suite) Run(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Success", s.testSuccess},
		{"ExitCode", s.testExitCode},
		{"Timeout", s.testTimeout},
		{"Stop", s.testStop},
		{"StopBeforeStart", s.testStopBeforeStart},
		{"StdinEnv", s.testStdinEnv},
		{"OutputsBeforeFinish", s.testOutputsBeforeFinish},
		{"StartTwice", s.testStartTwice},
		{"UnknownHandle", s.testUnknownHandle},
		{"InvalidSpec", s.testInvalidSpec},
		{"RunCancelled", s.testRunCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start prepares and starts spec, and removes it at cleanup.
func start(t *testing.T, ex executor.Executor, spec executor.Spec) executor.Handle {
	t.Helper()
	ctx := ctxT(t)
	h, err := ex.Prepare(ctx, spec)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(func() {
		if err := ex.Remove(context.Background(), h); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	if err := ex.Start(ctx, h); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

func wait(t *testing.T, ex executor.Executor, h executor.Handle) executor.Result {
	t.Helper()
	res, err := ex.Wait(ctxT(t), h)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if res.FinishedAt.Before(res.StartedAt) || res.StartedAt.IsZero() {
		t.Errorf("result times: started %v, finished %v", res.StartedAt, res.FinishedAt)
	}
	return res
}

// Logs returns the whole (non-followed) log of h.
func Logs(t *testing.T, ex executor.Executor, h executor.Handle) string {
	t.Helper()
	rc, err := ex.Logs(ctxT(t), h, false)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Logs: read: %v", err)
	}
	return string(b)
}

// waitForLine reads a followed log until a line equals want.
func waitForLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if strings.TrimSpace(line) == want {
			return
		}
		if err != nil {
			t.Fatalf("log ended before %q: %v", want, err)
		}
	}
}

// TarFiles returns the regular files in the tar at path.
func TarFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string]string{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = string(b)
		}
	}
}

func (s Suite) testSuccess(t *testing.T) {
	ex := s.New(t)
	h := start(t, ex, s.Spec(t, Hello))
	res := wait(t, ex, h)
	if res.Reason != executor.ReasonCompleted || res.ExitCode != 0 || !res.OK() {
		t.Fatalf("result = %+v, want completed/0", res)
	}
	if logs := Logs(t, ex, h); !strings.Contains(logs, HelloText) {
		t.Errorf("logs = %q, want %q", logs, HelloText)
	}
	out, err := ex.Outputs(ctxT(t), h)
	if err != nil {
		t.Fatalf("Outputs: %v", err)
	}
	if err := executor.VerifyOutput(out); err != nil {
		t.Fatalf("VerifyOutput: %v", err)
	}
	if got := TarFiles(t, out.Path)[HelloFile]; got != HelloFileData {
		t.Errorf("%s = %q, want %q", HelloFile, got, HelloFileData)
	}
	again, err := ex.Outputs(ctxT(t), h)
	if err != nil || again.CID != out.CID {
		t.Errorf("second Outputs = %v, %v; want CID %s", again.CID, err, out.CID)
	}
}

func (s Suite) testExitCode(t *testing.T) {
	ex := s.New(t)
	res := wait(t, ex, start(t, ex, s.Spec(t, Exit3)))
	if res.Reason != executor.ReasonFailed || res.ExitCode != 3 {
		t.Fatalf("result = %+v, want failed/3", res)
	}
}

func (s Suite) testTimeout(t *testing.T) {
	ex := s.New(t)
	spec := s.Spec(t, Hang)
	spec.Limits.MaxDuration = 300 * time.Millisecond
	res := wait(t, ex, start(t, ex, spec))
	if res.Reason != executor.ReasonTimeout || res.ExitCode != -1 {
		t.Fatalf("result = %+v, want timeout/-1", res)
	}
	if d := res.FinishedAt.Sub(res.StartedAt); d < spec.Limits.MaxDuration {
		t.Errorf("ran %v, less than max duration %v", d, spec.Limits.MaxDuration)
	}
}

func (s Suite) testStop(t *testing.T) {
	ex := s.New(t)
	h := start(t, ex, s.Spec(t, Hang))
	rc, err := ex.Logs(ctxT(t), h, true)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	waitForLine(t, br, HangText)
	if err := ex.Stop(ctxT(t), h, 10*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	res := wait(t, ex, h)
	if res.Reason != executor.ReasonStopped || res.ExitCode != -1 {
		t.Fatalf("result = %+v, want stopped/-1", res)
	}
	// The followed log ends once the workload is gone.
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("follow after stop: %v", err)
	}
	if err := ex.Stop(ctxT(t), h, time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func (s Suite) testStopBeforeStart(t *testing.T) {
	ex := s.New(t)
	h, err := ex.Prepare(ctxT(t), s.Spec(t, Hello))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer ex.Remove(context.Background(), h)
	if err := ex.Stop(ctxT(t), h, time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if res := wait(t, ex, h); res.Reason != executor.ReasonStopped {
		t.Fatalf("result = %+v, want stopped", res)
	}
	if err := ex.Start(ctxT(t), h); !errors.Is(err, executor.ErrState) {
		t.Errorf("Start after Stop = %v, want ErrState", err)
	}
}

func (s Suite) testStdinEnv(t *testing.T) {
	ex := s.New(t)
	spec := s.Spec(t, Echo)
	spec.Stdin = []byte("line from stdin\n")
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	spec.Env[EchoEnv] = "value from env"
	h := start(t, ex, spec)
	if res := wait(t, ex, h); !res.OK() {
		t.Fatalf("result = %+v", res)
	}
	logs := Logs(t, ex, h)
	for _, want := range []string{"line from stdin", "value from env"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs = %q, want %q", logs, want)
		}
	}
}

func (s Suite) testOutputsBeforeFinish(t *testing.T) {
	ex := s.New(t)
	h := start(t, ex, s.Spec(t, Hang))
	if _, err := ex.Outputs(ctxT(t), h); !errors.Is(err, executor.ErrState) {
		t.Fatalf("Outputs while running = %v, want ErrState", err)
	}
}

func (s Suite) testStartTwice(t *testing.T) {
	ex := s.New(t)
	h := start(t, ex, s.Spec(t, Hello))
	if err := ex.Start(ctxT(t), h); !errors.Is(err, executor.ErrState) {
		t.Fatalf("second Start = %v, want ErrState", err)
	}
	wait(t, ex, h)
}

func (s Suite) testUnknownHandle(t *testing.T) {
	ex := s.New(t)
	ctx := ctxT(t)
	h := executor.Handle("no-such-handle")
	if err := ex.Start(ctx, h); !errors.Is(err, executor.ErrUnknownHandle) {
		t.Errorf("Start = %v", err)
	}
	if _, err := ex.Wait(ctx, h); !errors.Is(err, executor.ErrUnknownHandle) {
		t.Errorf("Wait = %v", err)
	}
	if _, err := ex.Logs(ctx, h, false); !errors.Is(err, executor.ErrUnknownHandle) {
		t.Errorf("Logs = %v", err)
	}
	if _, err := ex.Outputs(ctx, h); !errors.Is(err, executor.ErrUnknownHandle) {
		t.Errorf("Outputs = %v", err)
	}
	if err := ex.Remove(ctx, h); !errors.Is(err, executor.ErrUnknownHandle) {
		t.Errorf("Remove = %v", err)
	}
}

func (s Suite) testInvalidSpec(t *testing.T) {
	ex := s.New(t)
	spec := s.Spec(t, Hello)
	spec.Limits.Network = "everything"
	if _, err := ex.Prepare(ctxT(t), spec); !errors.Is(err, executor.ErrInvalidSpec) {
		t.Errorf("Prepare(bad network) = %v, want ErrInvalidSpec", err)
	}
	spec = s.Spec(t, Hello)
	spec.Runtime = "no-such-runtime"
	if _, err := ex.Prepare(ctxT(t), spec); !errors.Is(err, executor.ErrUnsupported) {
		t.Errorf("Prepare(bad runtime) = %v, want ErrUnsupported", err)
	}
}

func (s Suite) testRunCancelled(t *testing.T) {
	ex := s.New(t)
	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	h, res, err := executor.Run(ctx, ex, s.Spec(t, Hang), 10*time.Second)
	if h != "" {
		defer ex.Remove(context.Background(), h)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want deadline exceeded", err)
	}
	if res.Reason != executor.ReasonStopped {
		t.Fatalf("result = %+v, want stopped", res)
	}
}
