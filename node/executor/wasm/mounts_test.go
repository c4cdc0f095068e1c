package wasm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/idlegrid/idlegrid/node/executor/executortest"
)

// TestReadOnlyMounts: a directory mounted read-only is readable by the
// guest and cannot be written to.
func TestReadOnlyMounts(t *testing.T) {
	in := t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "x.txt"), []byte("0.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, func(c *Config) { c.ReadOnlyMounts = map[string]string{"/in": in} })
	h, res := runSpec(t, e, progSpec("mounted"))
	if !res.OK() {
		t.Fatalf("result = %+v; logs %q", res, executortest.Logs(t, e, h))
	}
	out, err := e.Outputs(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if files := executortest.TarFiles(t, out.Path); files["copy.txt"] != "0.5\n" {
		t.Fatalf("tar files = %q, want the mounted file copied", files)
	}
	if _, err := os.Stat(filepath.Join(in, "y.txt")); err == nil {
		t.Fatal("the guest wrote into the read-only mount")
	}
}
