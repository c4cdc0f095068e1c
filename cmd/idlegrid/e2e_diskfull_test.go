package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProviderOnFullDiskKeepsRunning runs the provider daemon with its
// home on a 128 MiB tmpfs (store.low_space_mib 32) and fills the file
// system: the daemon keeps running, its log and `status` say the disk is
// nearly full, it takes no new lease (the job goes unfilled); once the
// space is freed, status is clear again and the next job runs.
func TestProviderOnFullDiskKeepsRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	fs := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", fs).CombinedOutput(); err != nil {
		if os.Getenv("IDLEGRID_REQUIRE_PACKAGE") == "1" { // CI: root, so this must work
			t.Fatalf("mount a tmpfs: %v: %s", err, out)
		}
		t.Skipf("needs to mount a small tmpfs (run as root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", fs).Run() })
	d := startTrustNetOn(t, false, fs, "--set", "store.low_space_mib=32")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// Fill the file system to 8 MiB free.
	var st syscall.Statfs_t
	if err := syscall.Statfs(fs, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if free < 40<<20 {
		t.Fatalf("only %d MiB free on the tmpfs before filling it", free>>20)
	}
	filler := filepath.Join(fs, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, free-8<<20); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	waitFor(t, ctx, "status to say the disk is nearly full", d.all, func() (bool, string) {
		st, err := d.provider.client.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(st.NotReady, func(s string) bool { return strings.Contains(s, "nearly full") }), fmt.Sprint(st.NotReady)
	})
	if out, err := run(t, d.bin, "status", "--home", d.provider.home); err != nil || !strings.Contains(out, "nearly full") {
		t.Errorf("idlegrid status: %v\n%s", err, out)
	}
	// max_wait 0s: unfilled at the first auction, not waiting for space.
	id := d.submitSpec(t, "disk-full", 64, "2s", "max_wait: 0s\n")
	if j := d.waitJob(t, ctx, id); j.State != "unfilled" {
		t.Fatalf("job %s (%s) while the provider's disk is full, want unfilled", j.State, j.Reason)
	}
	if d.provider.cmd.ProcessState != nil {
		t.Fatalf("the provider exited: %v", d.provider.cmd.ProcessState)
	}
	if !strings.Contains(d.provider.log.String(), "disk nearly full") {
		t.Error("the provider's log does not say the disk is nearly full")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "status to be clear again", d.all, func() (bool, string) {
		st, err := d.provider.client.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(st.NotReady) == 0, fmt.Sprint(st.NotReady)
	})
	id = d.submit(t, "disk-freed", 64)
	if j := d.waitJob(t, ctx, id); j.State != "completed" {
		t.Fatalf("job %s (%s) after the space came back, want completed", j.State, j.Reason)
	}
	if !strings.Contains(d.provider.log.String(), "disk space back") {
		t.Error("the provider's log does not say the space came back")
	}
}
