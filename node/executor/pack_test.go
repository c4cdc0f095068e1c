package executor

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeTree creates files (name -> content; a trailing "/" makes a dir).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if name[len(name)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

func readTar(t *testing.T, path string) []*tar.Header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdrs []*tar.Header
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hdrs
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
	}
}

func TestPackOutputsDeterministic(t *testing.T) {
	files := map[string]string{
		"b.txt": "bee", "a.txt": "ay", "sub/z.bin": "\x00\x01", "sub/deeper/c": "see", "empty/": "",
	}
	var outs []Output
	for i := range 2 {
		dir := t.TempDir()
		writeTree(t, dir, files)
		// Times and permissions differ between the runs; the tar must not.
		when := time.Date(2020+i, 1, 1, 0, 0, 0, 0, time.UTC)
		os.Chtimes(filepath.Join(dir, "a.txt"), when, when)
		os.Chmod(filepath.Join(dir, "b.txt"), os.FileMode(0o600+i*0o44))
		out, err := PackOutputs(dir, filepath.Join(t.TempDir(), "out.tar"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyOutput(out); err != nil {
			t.Fatalf("VerifyOutput: %v", err)
		}
		outs = append(outs, out)
	}
	if outs[0].CID != outs[1].CID || outs[0].Size != outs[1].Size {
		t.Fatalf("packs differ: %+v vs %+v", outs[0], outs[1])
	}
	var names []string
	for _, h := range readTar(t, outs[0].Path) {
		names = append(names, h.Name)
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: not normalized: %+v", h.Name, h)
		}
	}
	want := []string{"a.txt", "b.txt", "empty/", "sub/", "sub/deeper/", "sub/deeper/c", "sub/z.bin"}
	if len(names) != len(want) {
		t.Fatalf("entries = %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries = %q, want %q", names, want)
		}
	}
}

func TestPackOutputsSkipsSymlinks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	writeTree(t, dir, map[string]string{"ok.txt": "fine"})
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	os.Symlink(filepath.Dir(secret), filepath.Join(dir, "dirlink"))
	out, err := PackOutputs(dir, filepath.Join(t.TempDir(), "out.tar"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Skipped) != 2 || out.Skipped[0] != "dirlink" || out.Skipped[1] != "link" {
		t.Errorf("Skipped = %q", out.Skipped)
	}
	for _, h := range readTar(t, out.Path) {
		if h.Name != "ok.txt" {
			t.Errorf("unexpected entry %q", h.Name)
		}
	}
}

func TestPackOutputsCap(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"big": string(make([]byte, 64<<10))})
	tarPath := filepath.Join(t.TempDir(), "out.tar")
	if _, err := PackOutputs(dir, tarPath, 32<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("PackOutputs = %v, want ErrTooLarge", err)
	}
	if _, err := os.Stat(tarPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial tar left behind: %v", err)
	}
}

func TestVerifyOutputMismatch(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f": "data"})
	out, err := PackOutputs(dir, filepath.Join(t.TempDir(), "out.tar"), 0)
	if err != nil {
		t.Fatal(err)
	}
	wrongSize := out
	wrongSize.Size++
	if err := VerifyOutput(wrongSize); !errors.Is(err, ErrCIDMismatch) {
		t.Errorf("VerifyOutput(size) = %v", err)
	}
	wrongCID := out
	wrongCID.CID = CIDOf([]byte("else"))
	if err := VerifyOutput(wrongCID); !errors.Is(err, ErrCIDMismatch) {
		t.Errorf("VerifyOutput(cid) = %v", err)
	}
}
