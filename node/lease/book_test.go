package lease

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/store"
)

func TestStates(t *testing.T) {
	for _, s := range []State{Completed, Preempted, Cancelled, Failed, Expired} {
		if !s.Terminal() || !s.Valid() {
			t.Errorf("%s: terminal %v valid %v", s, s.Terminal(), s.Valid())
		}
	}
	for _, s := range []State{Awarded, Preparing, Running} {
		if s.Terminal() || !s.Valid() {
			t.Errorf("%s: terminal %v valid %v", s, s.Terminal(), s.Valid())
		}
	}
	if State("exploded").Valid() {
		t.Error("an unknown state is valid")
	}
	if JobState(JobRunning).Terminal() || !JobState(JobUnfilled).Terminal() {
		t.Error("job states")
	}
}

// TestBookKeepsFirstOutcomeAndWakesWaiters: Finish records the first end
// only; Wait returns once the version passes what the waiter saw.
func TestBookKeepsFirstOutcomeAndWakesWaiters(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.UnixMilli(1_700_000_000_000)
	b := NewBook(db, func() time.Time { return now })
	l := &store.Lease{ID: "lease-1", Side: SideProvider, State: Running}
	if err := b.Put(l); err != nil {
		t.Fatal(err)
	}
	seen := l.Version
	woke := make(chan *store.Lease, 1)
	go func() {
		cur, _ := b.Wait(context.Background(), l.ID, seen)
		woke <- cur
	}()
	if _, done, err := b.Finish(l.ID, Completed, "", nil); err != nil || !done {
		t.Fatalf("first finish: done %v, %v", done, err)
	}
	if cur := <-woke; cur.State != Completed || cur.Version <= seen {
		t.Fatalf("waiter woke with %s v%d", cur.State, cur.Version)
	}
	cur, done, err := b.Finish(l.ID, Failed, "late", nil)
	if err != nil || done || cur.State != Completed {
		t.Fatalf("second finish changed a terminal lease: %s, done %v, %v", cur.State, done, err)
	}
	if cur.UpdatedAtMs != now.UnixMilli() {
		t.Fatalf("updated at %d, want the book's clock", cur.UpdatedAtMs)
	}
}
