package provider

import (
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// TestShortLeaseIsAttested: work shorter than the sampling interval still
// ends with a telemetry window that names its lease, so the renter can pay
// for it and the provider can issue a receipt. The sampler never ticks
// here (its period is an hour): only the readings taken at the lease's
// start and end events are in the window.
func TestShortLeaseIsAttested(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	r := newAttestorRoom(t, func() time.Time { return now })
	a, db, self := r.open(), r.db, r.self
	devs, err := r.sim.Devices()
	if err != nil || len(devs) != 1 {
		t.Fatalf("devices: %v %v", devs, err)
	}
	renterKey, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	renter, _ := peer.IDFromPrivateKey(renterKey)
	l := &store.Lease{
		ID: attest.RecordID([]byte("lease")).String(), Renter: renter.String(),
		JobCID: attest.RecordID([]byte("job")).String(), GPUs: []string{devs[0].UUID},
	}
	first := a.jobEvent(l, attest.JobStarted)
	now = now.Add(400 * time.Millisecond)
	last := a.jobEvent(l, attest.JobFinished)

	raws, err := db.ChainEntries(self.String(), first, last)
	if err != nil {
		t.Fatal(err)
	}
	var windows []*attest.Telemetry
	for _, raw := range raws {
		e, err := attest.OpenEntry(raw)
		if err != nil {
			t.Fatal(err)
		}
		if e.Telemetry != nil {
			windows = append(windows, e.Telemetry)
		}
	}
	if len(windows) != 1 {
		t.Fatalf("%d telemetry windows between the lease's start and end, want 1", len(windows))
	}
	w := windows[0]
	if len(w.GPUs) != 1 || w.GPUs[0].Lease != l.ID || w.GPUs[0].Samples != 2 {
		t.Fatalf("window %+v: want one GPU serving %s with a reading at the start and one at the end", w.GPUs, l.ID)
	}
	if w.EndMs != now.UnixMilli() || w.GPUs[0].EnergyMs != 400 {
		t.Fatalf("window ends at %d with %d ms of energy, want it to end at the lease's end %d and measure all 400 ms",
			w.EndMs, w.GPUs[0].EnergyMs, now.UnixMilli())
	}
}

// TestRestartKeepsTheHeartbeatSlot: an attestor reopened on a chain whose
// last entry is in the current heartbeat slot does not gossip another
// heartbeat in it (every node would ignore it); in a fresh store it
// gossips the first entry it closes.
func TestRestartKeepsTheHeartbeatSlot(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	r := newAttestorRoom(t, func() time.Time { return now })
	self, open := r.self, r.open
	if a := open(); a.beaten {
		t.Fatal("a fresh chain: a heartbeat counted as gossiped")
	}
	a := open()
	if err := a.fingerprint(); err != nil {
		t.Fatal(err)
	}
	b := open()
	if want := attest.BeatSlot(self.String(), now.UnixMilli(), 10*time.Minute); !b.beaten || b.beatSlot != want {
		t.Fatalf("reopened: slot %d (beaten %v), want %d", b.beatSlot, b.beaten, want)
	}
}

// attestorRoom is an attestor's store, key and simulated A10, from which
// open builds an attestor (again, as after a restart).
type attestorRoom struct {
	t     *testing.T
	clock func() time.Time
	sim   *gpu.Sim
	db    *store.DB
	key   crypto.PrivKey
	self  peer.ID
}

func newAttestorRoom(t *testing.T, clock func() time.Time) *attestorRoom {
	t.Helper()
	sim, err := gpu.NewSim(gpu.SimConfig{Profiles: []string{"a10"}, Seed: 1, Clock: clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	db, err := store.Open(t.TempDir(), store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := peer.IDFromPrivateKey(key)
	return &attestorRoom{t: t, clock: clock, sim: sim, db: db, key: key, self: self}
}

// open opens an attestor on the room's chain: sampling and windows an
// hour long (they never tick in a test), heartbeat slots of 10 minutes.
func (r *attestorRoom) open() *attestor {
	r.t.Helper()
	a, err := openAttestor(attestorDeps{
		log: slog.New(slog.DiscardHandler), now: r.clock, key: r.key, self: r.self,
		db: r.db, book: lease.NewBook(r.db, r.clock), gpus: r.sim,
		cfg: lease.Terms{Sample: time.Hour, Window: time.Hour}, beatEvery: 10 * time.Minute,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}
