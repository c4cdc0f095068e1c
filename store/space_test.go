package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of sizeMiB on a fresh directory and unmounts
// it at cleanup (after every store opened later is closed).
func mountTmpfs(t *testing.T, sizeMiB int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("this test needs to mount a small tmpfs (run as root): mount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes path until the filesystem refuses, leaving leaveMiB
// free (0: nothing).
func fillDisk(t *testing.T, path string, leaveMiB uint64) {
	t.Helper()
	free, err := FreeBytes(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if leaveMiB > 0 {
		if free <= leaveMiB<<20 {
			t.Fatalf("only %d MiB free, want to leave %d", free>>20, leaveMiB)
		}
		if _, err := f.Write(make([]byte, free-leaveMiB<<20)); err != nil {
			t.Fatalf("fill: %v", err)
		}
		return
	}
	for _, chunk := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, unix.ENOSPC) {
					t.Fatalf("fill: %v", err)
				}
				break
			}
		}
	}
	if free, _ := FreeBytes(filepath.Dir(path)); free != 0 {
		t.Fatalf("disk not full: %d bytes free", free)
	}
}

func wantDiskFull(t *testing.T, err error, dir string) {
	t.Helper()
	var le *LowSpaceError
	if !errors.Is(err, ErrDiskFull) || !errors.As(err, &le) {
		t.Fatalf("got %v, want ErrDiskFull", err)
	}
	if le.Dir != dir || le.FreeMiB >= le.NeedMiB || !strings.Contains(err.Error(), "MiB free on "+dir+", need ") {
		t.Fatalf("unclear refusal: %v (%+v)", err, le)
	}
}

func lease(id string) *Lease {
	return &Lease{ID: id, Side: "provider", State: "active", GPUs: []string{"GPU-0"}}
}

func TestFullDiskRefusesWritesAndLosesNothing(t *testing.T) {
	fs := mountTmpfs(t, 64)
	dir := filepath.Join(fs, "store")
	opts := Options{LowSpaceMiB: 20}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, low, err := db.FreeSpace(); err != nil || low {
		t.Fatalf("fresh store on 64 MiB: low %v %v", low, err)
	}
	if err := db.PutLease(lease("before")); err != nil {
		t.Fatalf("write with space: %v", err)
	}

	fillDisk(t, filepath.Join(fs, "fill-1"), 10)
	wantDiskFull(t, db.PutLease(lease("nearly-full")), dir)
	if _, low, _ := db.FreeSpace(); !low {
		t.Fatal("FreeSpace must report low space")
	}
	fillDisk(t, filepath.Join(fs, "fill-2"), 0)
	wantDiskFull(t, db.PutLease(lease("full")), dir)
	if _, err := db.PutChainEntry("p", 1, []byte("entry"), true); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("chain entry on a full disk: %v", err)
	}
	if l, err := db.GetLease("before"); err != nil || l.State != "active" {
		t.Fatalf("reads on a full disk: %+v %v", l, err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close on a full disk: %v", err)
	}

	// Restart with the disk still full: it opens and refuses writes.
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("reopen on a full disk: %v", err)
	}
	if l, err := db.GetLease("before"); err != nil || l.ID != "before" {
		t.Fatalf("write admitted before the disk filled lost: %+v %v", l, err)
	}
	for _, id := range []string{"nearly-full", "full"} {
		if _, err := db.GetLease(id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("refused write %q stored: %v", id, err)
		}
	}
	wantDiskFull(t, db.PutLease(lease("still-full")), dir)

	// Space returns: writes work again, without a restart.
	for _, f := range []string{"fill-1", "fill-2"} {
		if err := os.Remove(filepath.Join(fs, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, low, _ := db.FreeSpace(); low {
		t.Fatal("FreeSpace still low after space returned")
	}
	if err := db.PutLease(lease("after")); err != nil {
		t.Fatalf("write after space returned: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Closed store, full disk: Open is the typed refusal, not a fault.
	fillDisk(t, filepath.Join(fs, "fill-3"), 0)
	if _, err := Open(dir, opts); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open on a full disk: %v", err)
	}
	if err := os.Remove(filepath.Join(fs, "fill-3")); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir)
	for _, id := range []string{"before", "after"} {
		if _, err := db.GetLease(id); err != nil {
			t.Fatalf("lease %q after the full-disk episode: %v", id, err)
		}
	}
}

// TestFullDiskUnderWriteLoad fills the disk while a writer keeps writing:
// every write either lands (and survives a reopen) or is refused.
func TestFullDiskUnderWriteLoad(t *testing.T) {
	fs := mountTmpfs(t, 64)
	dir := filepath.Join(fs, "store")
	opts := Options{LowSpaceMiB: 20}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(strings.Repeat("v", 4000))
	var stored []string
	fill, err := os.Create(filepath.Join(fs, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 256<<10)
	refused := 0
	for i := 0; refused < 50; i++ {
		id := fmt.Sprintf("s%05d", i)
		switch err := db.PutSummary(id, value, fixtureExpiry); {
		case err == nil:
			stored = append(stored, id)
		case errors.Is(err, ErrDiskFull):
			refused++
		default:
			t.Fatalf("write %d: %v", i, err)
		}
		_, _ = fill.Write(chunk) // until ENOSPC
	}
	_ = fill.Close()
	if len(stored) == 0 {
		t.Fatal("no write landed before the disk filled")
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close on a full disk: %v", err)
	}
	if err := os.Remove(filepath.Join(fs, "fill")); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir)
	got, err := db.Summaries()
	if err != nil || len(got) != len(stored) {
		t.Fatalf("after reopen %d summaries (%v), %d were admitted", len(got), err, len(stored))
	}
}

func TestLowSpaceThresholdOnAnyDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db, err := Open(dir, Options{LowSpaceMiB: 1 << 40}) // more than any disk
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	wantDiskFull(t, db.SetCapacitySeq(1), dir)
	if free, low, err := db.FreeSpace(); err != nil || !low || free == 0 {
		t.Fatalf("FreeSpace %d %v %v", free, low, err)
	}
	off, err := Open(filepath.Join(t.TempDir(), "off"), Options{LowSpaceMiB: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = off.Close() })
	if err := off.SetCapacitySeq(1); err != nil {
		t.Fatalf("gate off: %v", err)
	}
	if _, low, _ := off.FreeSpace(); low {
		t.Fatal("a store with the gate off is never low")
	}
}
