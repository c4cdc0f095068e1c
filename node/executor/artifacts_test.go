package executor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDirArtifacts(t *testing.T) {
	dir := t.TempDir()
	a, err := NewDirArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("a wasm module, say")
	id, err := a.PutBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if id != CIDOf(data) || !a.Has(id) {
		t.Fatalf("Put = %s, want %s (has %v)", id, CIDOf(data), a.Has(id))
	}
	got, err := ReadArtifact(t.Context(), a, id, 1<<20)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadArtifact = %q, %v", got, err)
	}

	t.Run("TooLarge", func(t *testing.T) {
		if _, err := ReadArtifact(t.Context(), a, id, 4); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("ReadArtifact(cap 4) = %v", err)
		}
		if _, err := a.Put(strings.NewReader("0123456789"), 4); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Put(cap 4) = %v", err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		if _, err := a.Get(t.Context(), CIDOf([]byte("absent"))); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get = %v, want ErrNotFound", err)
		}
	})
	t.Run("InvalidCID", func(t *testing.T) {
		// A "CID" that is a path must never reach the file system.
		if _, err := a.Get(t.Context(), "../../etc/passwd"); !errors.Is(err, ErrInvalidCID) {
			t.Fatalf("Get = %v, want ErrInvalidCID", err)
		}
	})
	t.Run("Tampered", func(t *testing.T) {
		other := []byte("other bytes")
		oid, _ := a.PutBytes(other)
		if err := os.WriteFile(filepath.Join(dir, oid), []byte("swapped"), 0o644); err != nil {
			t.Fatal(err)
		}
		rc, err := a.Get(t.Context(), oid)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if _, err := io.ReadAll(rc); !errors.Is(err, ErrCIDMismatch) {
			t.Fatalf("read tampered = %v, want ErrCIDMismatch", err)
		}
		if _, err := ReadArtifact(t.Context(), a, oid, 1<<20); !errors.Is(err, ErrCIDMismatch) {
			t.Fatalf("ReadArtifact(tampered) = %v, want ErrCIDMismatch", err)
		}
	})
	t.Run("NoTempLeft", func(t *testing.T) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".put-") {
				t.Errorf("temp file left: %s", e.Name())
			}
		}
	})
}

// TestDirArtifactsList lists what was stored, newest first, with sizes,
// and skips files that are not named by a CID (a Put in progress).
func TestDirArtifactsList(t *testing.T) {
	dir := t.TempDir()
	a, err := NewDirArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	older, err := a.PutBytes([]byte("first module"))
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, older), past, past); err != nil {
		t.Fatal(err)
	}
	newer, err := a.PutBytes([]byte("the second, longer module"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".put-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := a.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].CID != newer || list[1].CID != older || list[0].Bytes != 25 || !list[0].AddedAt.After(list[1].AddedAt) {
		t.Errorf("List = %+v, want %s then %s", list, newer, older)
	}
}
