package deploy

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRelease runs make release: the Linux binary and the renter's
// desktops (macOS arm64 and amd64, Windows amd64) cross-compiled without
// cgo, each archived with README and LICENSE, and SHA256SUMS. It checks
// every archive against its sum, that each holds an executable for its
// platform, and runs the Linux one. The cross-compiles are what CI must
// keep building: a Linux-only call (flock, fallocate, statfs, kill) in any
// package the binary links fails here.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the release builds (they compile idlegrid for four platforms)")
	}
	if _, err := exec.LookPath("zip"); err != nil {
		if os.Getenv("IDLEGRID_REQUIRE_PACKAGE") == "1" {
			t.Fatal("IDLEGRID_REQUIRE_PACKAGE=1 but zip is missing (apt-get install zip)")
		}
		t.Skip("zip is not installed: make release zips the Windows build (apt-get install zip)")
	}
	dist := t.TempDir()
	const version = "0.1.0-reltest"
	run(t, "make", "-C", "..", "release", "DIST="+dist, "VERSION="+version)
	rel := filepath.Join(dist, "release")

	sums, err := os.ReadFile(filepath.Join(rel, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // archive -> the binary's format
		"idlegrid_" + version + "_linux_" + runtime.GOARCH + ".tar.gz": "elf",
		"idlegrid_" + version + "_darwin_arm64.tar.gz":                 "macho",
		"idlegrid_" + version + "_darwin_amd64.tar.gz":                 "macho",
		"idlegrid_" + version + "_windows_amd64.zip":                   "pe",
	}
	listed := map[string]string{}
	for line := range strings.Lines(string(sums)) {
		sum, name, ok := strings.Cut(strings.TrimSpace(line), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		listed[name] = sum
	}
	if len(listed) != len(want) {
		t.Errorf("SHA256SUMS lists %v, want %d archives", listed, len(want))
	}
	for name, format := range want {
		data, err := os.ReadFile(filepath.Join(rel, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != listed[name] {
			t.Errorf("%s: SHA256SUMS says %s", name, listed[name])
		}
		files := archiveFiles(t, filepath.Join(rel, name))
		dir := strings.TrimSuffix(strings.TrimSuffix(name, ".tar.gz"), ".zip") + "/"
		exe := dir + "idlegrid"
		if format == "pe" {
			exe += ".exe"
		}
		for _, f := range []string{exe, dir + "README.md", dir + "LICENSE"} {
			if _, ok := files[f]; !ok {
				t.Errorf("%s lacks %s (has %v)", name, f, keys(files))
			}
		}
		if bin := files[exe]; bin != "" && !isExecutable(bin, format) {
			t.Errorf("%s: %s is not a %s executable", name, exe, format)
		}
		if format == "elf" {
			if out := run(t, files[exe], "version"); strings.TrimSpace(out) != "idlegrid "+version {
				t.Errorf("the Linux binary says %q", out)
			}
		}
	}
}

// archiveFiles extracts an archive into a temporary directory and maps
// each file's name in it to its path on disk.
func archiveFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := t.TempDir()
	save := func(name string, r io.Reader) {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, r); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		out[name] = dst
	}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			save(f.Name, rc)
			rc.Close()
		}
		return out
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			save(h.Name, tr)
		}
	}
}

func isExecutable(path, format string) bool {
	var err error
	switch format {
	case "elf":
		var f *elf.File
		if f, err = elf.Open(path); err == nil {
			defer f.Close()
			return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
		}
	case "macho":
		var f *macho.File
		if f, err = macho.Open(path); err == nil {
			defer f.Close()
			return f.Type == macho.TypeExec
		}
	case "pe":
		var f *pe.File
		if f, err = pe.Open(path); err == nil {
			defer f.Close()
			return f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE != 0
		}
	}
	return false
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
