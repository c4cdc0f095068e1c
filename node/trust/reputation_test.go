package trust

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// TestReputationFoldsOffTheReadersPath: a reader takes the last fold
// while evidence that need not be waited for comes in (Refresh), and the
// background folds it in; after an outcome (Invalidate) no reader gets a
// fold from before it.
func TestReputationFoldsOffTheReadersPath(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	rep := tr.Reputation()
	same := func(a, b map[string]reputation.Result) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	first := rep.All()
	rep.Refresh()
	if !same(rep.All(), first) {
		t.Fatal("a read after Refresh folded on the reader's path")
	}
	rep.foldEvery = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { rep.runFolds(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for same(rep.All(), first) {
		if time.Now().After(deadline) {
			t.Fatal("the background never folded in what came after Refresh")
		}
		time.Sleep(10 * time.Millisecond)
	}
	background := rep.All()
	rep.Invalidate()
	if same(rep.All(), background) {
		t.Fatal("a read after Invalidate was served the fold from before it")
	}
}

// TestOnlyAFailureHoldsTheNextAward: a lease that ended well
// (LeaseEnded of a completed or preempted lease) leaves readers the last
// fold, for the background to fold in; one that failed makes the next
// read fold, so an award never offers a provider that just failed as if
// it had not.
func TestOnlyAFailureHoldsTheNextAward(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	rep := tr.Reputation()
	provider := peers[1].ID.String()
	same := func(a, b map[string]reputation.Result) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	ended := func(id, state string) *store.Lease {
		l := &store.Lease{ID: id, Side: lease.SideRenter, Provider: provider, Renter: peers[0].ID.String(),
			GPUs: []string{"GPU-0"}, ExpectedSec: 3600, State: state, UpdatedAtMs: peers[0].Clock.Now().UnixMilli()}
		if err := tr.db.PutLease(l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := rep.All()
	rep.LeaseEnded(ended("l-done", lease.Completed))
	rep.LeaseEnded(ended("l-preempted", lease.Preempted))
	if !same(rep.All(), first) {
		t.Fatal("a completed or preempted lease made the next read fold")
	}
	rep.LeaseEnded(ended("l-failed", lease.Failed))
	after := rep.All()
	if same(after, first) {
		t.Fatal("the read after a failed lease was served the fold from before it")
	}
	if r := after[provider]; r.FailureWeight == 0 || r.SuccessWeight == 0 {
		t.Fatalf("the fold after the failure: %+v, want the failure and the completion in it", r)
	}
}

// TestFoldPace: the background folds at once when it has no fold to
// serve; evidence that came (a gossiped receipt, a completed lease) waits
// for the pace, so a steady stream of receipts costs one fold per pace,
// not one each; and with nothing new it folds again before a reader
// would take the last fold as too old to serve (reputationStaleMax).
func TestFoldPace(t *testing.T) {
	every := reputationFoldEvery
	for _, c := range []struct {
		have, stale bool
		since       time.Duration
		want        bool
	}{
		{have: false, want: true},
		{have: true, stale: true, since: every / 5, want: false},
		{have: true, stale: true, since: every, want: true},
		{have: true, since: every, want: false},
		{have: true, since: reputationRefoldEvery, want: true},
	} {
		if got := foldDue(c.have, c.stale, c.since, every); got != c.want {
			t.Errorf("foldDue(have %v, stale %v, %s since the last) = %v, want %v", c.have, c.stale, c.since, got, c.want)
		}
	}
	if reputationRefoldEvery >= reputationStaleMax {
		t.Errorf("the background refolds every %s, past the %s after which a reader folds itself", reputationRefoldEvery, reputationStaleMax)
	}
}

// TestOwnOutcomesKeptAsTheyEnd: the fold counts this node's ended leases
// from its first read of the store, then each as the renter reports it
// (LeaseEnded), without reading every lease again; an outcome nobody
// reported is read at the next reload (ownReloadEvery).
func TestOwnOutcomesKeptAsTheyEnd(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	rep := tr.Reputation()
	provider := peers[1].ID.String()
	store1 := func(id, state string) *store.Lease {
		l := &store.Lease{ID: id, Side: lease.SideRenter, Provider: provider, Renter: peers[0].ID.String(),
			GPUs: []string{"GPU-0"}, ExpectedSec: 3600, State: state, UpdatedAtMs: peers[0].Clock.Now().UnixMilli()}
		if err := tr.db.PutLease(l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	counts := func() (ok, failed int) {
		r := rep.fold(false)[provider]
		return r.OwnSuccesses, r.OwnFailures
	}
	store1("l-before", lease.Completed)
	store1("l-running", lease.Running)
	if ok, failed := counts(); ok != 1 || failed != 0 {
		t.Fatalf("first fold: %d completed, %d failed; want the stored completed lease alone", ok, failed)
	}
	rep.LeaseEnded(store1("l-reported", lease.Failed))
	store1("l-unreported", lease.Completed)
	if ok, failed := counts(); ok != 1 || failed != 1 {
		t.Fatalf("after a reported failure: %d completed, %d failed; want 1 and 1", ok, failed)
	}
	rep.own.mu.Lock()
	rep.own.loaded = rep.own.loaded.Add(-ownReloadEvery)
	rep.own.mu.Unlock()
	if ok, failed := counts(); ok != 2 || failed != 1 {
		t.Fatalf("after the reload: %d completed, %d failed; want the unreported lease counted too", ok, failed)
	}
}
