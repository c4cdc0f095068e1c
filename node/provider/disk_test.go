package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// TestNoBidsWhileTheDiskIsFull: on a real small filesystem, a provider
// whose store is short of space answers no RFQ (a won lease could not be
// stored); once space is freed it bids again, without a restart.
func TestNoBidsWhileTheDiskIsFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("needs to mount a small tmpfs (run as root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	db, err := store.Open(filepath.Join(dir, "store"), store.Options{LowSpaceMiB: 40})
	if err != nil {
		t.Fatal(err)
	}
	r := newRoomWith(t, 1, testOffer(), func(p *roomtest.Peer) {
		p.Store = db
		p.Leases = lease.NewBook(db, p.Clock.Now)
	})
	t.Cleanup(func() { _ = db.Close() })

	raw, _ := r.rfq(t, 1, auction.TierSilver)
	r.send(raw)
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids with room on the disk, want 1", n)
	}
	// Leave less than the 40 MiB the store needs.
	free, _, err := db.FreeSpace()
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, free-30<<20), 0o600); err != nil {
		t.Fatal(fmt.Errorf("fill the disk: %w", err))
	}
	r.prov.Clock.Advance(r.p.bidder.policy.BidValidity * 2)
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	r.send(raw)
	if n := len(r.takeBids(t)); n != 0 {
		t.Fatalf("%d bids with the disk nearly full, want none", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	r.send(raw)
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids after space returned, want 1", n)
	}
}
