package node

import (
	"errors"
	"fmt"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
)

func demoProof(t *testing.T, n int) (*attest.WrongResultProof, string) {
	t.Helper()
	spec := fmt.Appendf(nil, "name: replay\nmodule: %s\ncommand: [\"%d\"]\ngpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 10m\n", demo.CID, n)
	js, err := auction.ParseJobSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.CID()
	if err != nil {
		t.Fatal(err)
	}
	return &attest.WrongResultProof{Spec: spec, Module: demo.Module(),
		Bounds: attest.ReplayBounds{TimeMs: attest.MaxReplayTimeMs, MemoryMiB: 64, OutputMiB: 1}}, c.String()
}

// TestReplayIsDeterministic: the embedded WASM runtime re-runs the demo
// job from a proof's bytes alone, twice, to the same output.
func TestReplayIsDeterministic(t *testing.T) {
	replay := replayer(t.TempDir(), nil)
	p, job := demoProof(t, 32)
	var outs []string
	for range 2 {
		code, out, err := replay(t.Context(), p, job)
		if err != nil || code != 0 || out == "" {
			t.Fatalf("replay: exit %d output %q err %v", code, out, err)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Fatalf("two re-runs gave %s and %s", outs[0], outs[1])
	}
	other, job2 := demoProof(t, 33)
	if _, out, err := replay(t.Context(), other, job2); err != nil || out == outs[0] {
		t.Fatalf("another N: output %s, err %v", out, err)
	}
}

// TestReplayRefusesAProofFalseOnItsFace: a spec that is not the claimed
// job, or a module that is not the spec's, makes the proof false before
// anything runs.
func TestReplayRefusesAProofFalseOnItsFace(t *testing.T) {
	replay := replayer(t.TempDir(), nil)
	p, job := demoProof(t, 32)
	_, other := demoProof(t, 33)
	if _, _, err := replay(t.Context(), p, other); !errors.Is(err, attest.ErrFalseProof) {
		t.Errorf("spec of another job: %v, want ErrFalseProof", err)
	}
	p.Module = append(p.Module, 0)
	if _, _, err := replay(t.Context(), p, job); !errors.Is(err, attest.ErrFalseProof) {
		t.Errorf("another module: %v, want ErrFalseProof", err)
	}
	p.Spec = []byte("not: [a spec")
	if _, _, err := replay(t.Context(), p, job); !errors.Is(err, attest.ErrFalseProof) {
		t.Errorf("garbage spec: %v, want ErrFalseProof", err)
	}
}
