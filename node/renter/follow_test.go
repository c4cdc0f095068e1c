package renter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// TestSilentProviderFailsTheLease: a running lease's provider stops
// answering; once the clock passes market.provider_timeout the follower
// fails the lease as unreachable (the job is then re-auctioned), long
// before the lease's end, and tells trust at once, so the next award
// does not offer that provider as if it had not failed.
func TestSilentProviderFailsTheLease(t *testing.T) {
	r, me, provs := newRenter(t, 1)
	r.follower.providerTimeout = 30 * time.Second
	ended := make(chan *store.Lease, 1)
	r.follower.leaseEnded = func(l *store.Lease) { ended <- l }
	f := provs[0]
	l := renterLease(t, r, f, 1, 1_000_000)
	done := make(chan *store.Lease, 1)
	roomtest.Run(t, func(ctx context.Context) error {
		done <- r.follower.followLease(ctx, l)
		return nil
	})
	// Running, as the provider says; then it goes silent.
	roomtest.Eventually(t, 10*time.Second, "the lease mirrored running", func() bool {
		cur, err := r.db.GetLease(l.ID)
		return err == nil && cur.Version > 1
	})
	f.mu.Lock()
	f.silent = true
	f.mu.Unlock()
	// Silent, but not yet for long: the follower keeps trying.
	roomtest.Eventually(t, 10*time.Second, "the follower to see the silence", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.statusRefused > 0
	})
	select {
	case got := <-done:
		t.Fatalf("the follower gave up at once: %s %q", got.State, got.Reason)
	default:
	}
	me.Clock.Advance(31 * time.Second)
	var got *store.Lease
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not give up on a provider silent past the timeout")
	}
	if got.State != lease.Failed || !strings.HasPrefix(got.Reason, reasonUnreachable) {
		t.Fatalf("lease %s %q, want failed as unreachable", got.State, got.Reason)
	}
	select {
	case e := <-ended:
		if e.ID != l.ID || e.State != lease.Failed {
			t.Fatalf("trust was told of lease %s %s, want %s failed", e.ID, e.State, l.ID)
		}
	default:
		t.Fatal("trust was not told of the failed lease")
	}
}
