package renter

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// runningRenter is a renter room whose Run has started, so Submit can
// start auctions.
func runningRenter(t *testing.T) *Renter {
	t.Helper()
	r, _, _ := newRenter(t, 0)
	roomtest.Run(t, r.Run)
	roomtest.Eventually(t, 10*time.Second, "the renter to run", func() bool {
		return r.bg.running()
	})
	return r
}

func submitSpec(name string) []byte {
	return fmt.Appendf(nil, "name: %s\nmodule: %s\ngpus: 1\nmax_price: 10\nduration: 10m\nbid_window: 1s\n", name, testModule)
}

func TestEachSubmitIsANewJob(t *testing.T) {
	r := runningRenter(t)
	spec := submitSpec("twice")
	parsed, err := auction.ParseJobSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	specCID, err := parsed.CID()
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Submit(spec)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Submit(spec)
	if err != nil {
		t.Fatalf("the same spec again: %v", err)
	}
	if first.ID == second.ID {
		t.Fatalf("two submits of one spec share job %s", first.ID)
	}
	for _, j := range []*store.Job{first, second} {
		if j.SpecCID != specCID.String() {
			t.Errorf("job %s: spec CID %q, want %s", j.ID, j.SpecCID, specCID)
		}
		if j.ID == specCID.String() {
			t.Errorf("job ID is the spec CID %s", j.ID)
		}
	}
	jobs, err := r.db.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs stored, want 2", len(jobs))
	}
}

func TestIdempotencyKeyReturnsTheFirstJob(t *testing.T) {
	r := runningRenter(t)
	opts := SubmitOptions{IdempotencyKey: "retry-1"}
	first, err := r.SubmitWith(submitSpec("keyed"), opts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.SubmitWith(submitSpec("keyed"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID {
		t.Fatalf("retry with key %q made job %s, want %s", opts.IdempotencyKey, again.ID, first.ID)
	}
	if _, err := r.SubmitWith(submitSpec("other"), opts); !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("the key with another spec: %v, want ErrIdempotencyConflict", err)
	}
	other, err := r.SubmitWith(submitSpec("keyed"), SubmitOptions{IdempotencyKey: "retry-2"})
	if err != nil {
		t.Fatal(err)
	}
	if other.ID == first.ID {
		t.Fatal("another key returned the first job")
	}
	jobs, err := r.db.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs stored, want 2", len(jobs))
	}
}

// A provider fetches a lease's spec by lease; the renter must answer with
// the lease's own job even when another job has the same spec.
func TestLeaseJobIsTheSubmission(t *testing.T) {
	r := runningRenter(t)
	first, err := r.Submit(submitSpec("same"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Submit(submitSpec("same"))
	if err != nil {
		t.Fatal(err)
	}
	prov := "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
	l := &store.Lease{ID: "lease-2", Side: lease.SideRenter, JobCID: second.SpecCID, JobID: second.ID, Provider: prov, State: lease.Awarded}
	if err := r.db.PutLease(l); err != nil {
		t.Fatal(err)
	}
	old := &store.Lease{ID: "lease-old", Side: lease.SideRenter, JobCID: first.SpecCID, Provider: prov, State: lease.Awarded}
	if err := r.db.PutLease(old); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lease, want string
	}{
		{"lease-2", second.ID},
		// A lease stored before job IDs were their own names its job by
		// spec CID.
		{"lease-old", first.SpecCID},
	} {
		got, ok := r.server.leaseJob(tc.lease, mustPeer(t, prov))
		if !ok || got != tc.want {
			t.Errorf("leaseJob(%s) = %q, %v; want %q", tc.lease, got, ok, tc.want)
		}
	}
}

func mustPeer(t *testing.T, s string) peer.ID {
	t.Helper()
	id, err := peer.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
