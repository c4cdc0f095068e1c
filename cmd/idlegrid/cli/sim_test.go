package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestSimBuiltInSample replays the embedded sample as `idlegrid sim` does
// with no --traces (one seed, one policy, a short window): it runs from
// any directory, with no trace files on disk.
func TestSimBuiltInSample(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	root := NewRoot(&out, &errOut)
	root.SetArgs([]string{"sim", "--seeds", "1", "--policies", "idlegrid", "--limit", "200", "--per-seed"})
	if err := root.Execute(); err != nil {
		t.Fatalf("sim: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "200 jobs, 33 providers, 160 GPUs") || !strings.Contains(out.String(), "USD/GPU-h") || !strings.Contains(errOut.String(), "built-in sample") {
		t.Errorf("sim on the sample:\n%s\n%s", out.String(), errOut.String())
	}
	root = NewRoot(&out, &errOut)
	root.SetArgs([]string{"sim", "--traces", "no-such-dir"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "docs/sim.md") {
		t.Errorf("sim --traces with no such directory: %v", err)
	}
}
