// Package golden pins encodings in testdata files: a test renders a value
// and Check compares it with the file, so that a changed wire format fails
// a test instead of reaching peers unnoticed. Vector renders a sealed
// record as a protocol test vector (docs/protocol.md §5.2), and
// CheckSection pins a generated part of a document. Run the tests with
// -update to rewrite the files after a deliberate change.
//
// It is for tests only (importing it registers the -update flag), and it
// imports nothing of idlegrid, so the tests of every package may use it,
// attest's own included.
package golden

import (
	"flag"
	"os"
	"strings"
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

// CheckSection fails t unless the text between the lines
// "<!-- name:begin -->" and "<!-- name:end -->" of the file at path
// equals got. With -update it first rewrites that text, leaving the rest
// of the file as it is: for documents that embed generated tables.
func CheckSection(t testing.TB, path, name, got string) {
	t.Helper()
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no section %q (add the lines %q and %q)", path, name, strings.TrimSpace(begin), end)
	}
	have := doc[i+len(begin) : j]
	if *update && have != got {
		doc = doc[:i+len(begin)] + got + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		have = got
	}
	if have != got {
		t.Errorf("%s: section %q changed (run with -update to rewrite it):\n got %s\nwant %s", path, name, got, have)
	}
}
