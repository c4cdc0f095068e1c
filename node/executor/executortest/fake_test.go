package executortest

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	"github.com/idlegrid/idlegrid/node/executor"
)

func TestFakeSuite(t *testing.T) {
	Suite{
		New: func(t *testing.T) executor.Executor {
			f := NewFake(t.TempDir(), nil)
			t.Cleanup(func() { f.Close() })
			return f
		},
		Spec: func(t *testing.T, p Program) executor.Spec {
			spec := executor.Spec{Runtime: "fake", JobID: "job", LeaseID: "lease"}
			switch p {
			case Hello:
				spec.Args = []string{"print:" + HelloText, "write:" + HelloFile + "=" + HelloFileData}
			case Exit3:
				spec.Args = []string{"exit:3"}
			case Hang:
				spec.Args = []string{"print:" + HangText, "hang"}
			case Echo:
				spec.Args = []string{"stdin", "env:" + EchoEnv}
			}
			return spec
		},
	}.Run(t)
}

// TestFakeFill: fill:NAME=BYTES writes exactly FillData(BYTES) to NAME, the
// same bytes every time; a bad size fails the run.
func TestFakeFill(t *testing.T) {
	f := NewFake(t.TempDir(), nil)
	t.Cleanup(func() { f.Close() })
	const size = 3<<20 + 12345 // not a whole number of chunks
	spec := executor.Spec{Runtime: "fake", JobID: "job", LeaseID: "lease", Args: []string{"fill:big.bin=" + strconv.Itoa(size), "fill:empty=0"}}
	h := start(t, f, spec)
	if res := wait(t, f, h); res.Reason != executor.ReasonCompleted {
		t.Fatalf("result %+v", res)
	}
	out, err := f.Outputs(ctxT(t), h)
	if err != nil {
		t.Fatal(err)
	}
	files := TarFiles(t, out.Path)
	want, err := io.ReadAll(FillData(size))
	if err != nil {
		t.Fatal(err)
	}
	if got := files["big.bin"]; got != string(want) {
		t.Fatalf("big.bin: %d bytes, want %d bytes of FillData", len(got), len(want))
	}
	if got, ok := files["empty"]; !ok || got != "" {
		t.Fatalf("empty: %q (present %v)", got, ok)
	}
	again, _ := io.ReadAll(FillData(size))
	if !bytes.Equal(again, want) {
		t.Fatal("FillData is not deterministic")
	}

	for _, bad := range []string{"fill:x=-1", "fill:x=lots"} {
		h := start(t, f, executor.Spec{Runtime: "fake", JobID: "job", LeaseID: "lease", Args: []string{bad}})
		if res := wait(t, f, h); res.Reason != executor.ReasonFailed || res.ExitCode != 1 {
			t.Errorf("%s: result %+v, want failed with exit 1", bad, res)
		}
	}
}

// TestFakeWrongEvery: a cheating Fake returns a wrong output, exiting 0,
// for every n-th workload and runs the others as scripted.
func TestFakeWrongEvery(t *testing.T) {
	f := NewFake(t.TempDir(), nil)
	f.WrongEvery = 3
	t.Cleanup(func() { f.Close() })
	wrong := 0
	for i := range 9 {
		h := start(t, f, executor.Spec{Runtime: "fake", JobID: "job", LeaseID: "lease", Args: []string{"write:result.txt=42"}})
		if res := wait(t, f, h); res.Reason != executor.ReasonCompleted || res.ExitCode != 0 {
			t.Fatalf("run %d: result %+v", i, res)
		}
		out, err := f.Outputs(ctxT(t), h)
		if err != nil {
			t.Fatal(err)
		}
		files := TarFiles(t, out.Path)
		switch _, cheated := files[WrongFile]; {
		case cheated && (i+1)%3 == 0 && files["result.txt"] == "":
			wrong++
		case !cheated && files["result.txt"] == "42":
		default:
			t.Fatalf("run %d: outputs %v", i, files)
		}
	}
	if wrong != 3 {
		t.Fatalf("%d wrong outputs in 9 runs, want 3", wrong)
	}
}
