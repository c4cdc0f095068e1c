// Package golden pins encodings in testdata files: a test renders a value
// and Check compares it with the file, so that a changed wire format fails
// a test instead of reaching peers unnoticed. Run the tests with -update to
// rewrite the files after a deliberate change.
//
// It is for tests only (importing it registers the -update flag), and it
// imports nothing of idlegrid, so the tests of every package may use it,
// attest's own included.
package golden

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// Check fails t unless got equals the content of the file at path. With
// -update it first writes got there.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s changed:\n got %s\nwant %s", path, got, want)
	}
}
