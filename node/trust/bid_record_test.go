package trust

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// TestBidRecordNeedsNoLookup: a bid is checked against the record this
// node holds however old its fetch (while the record is current), else
// against the one the bidder serves of itself; only a bidder with neither
// costs a DHT lookup.
func TestBidRecordNeedsNoLookup(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	renter, prov, silent := peers[0], peers[1], peers[2]
	provTrust := servingOwnRecord(t, prov)
	tr := newTrust(t, renter)
	lookups := noDHT(tr)
	asked := serveRecords(t, prov, provTrust.ServeRecords)
	waitServes(t, tr, prov.ID)
	ctx := context.Background()

	// Not held: the bidder serves its own.
	got, err := tr.BidRecord(ctx, prov.ID)
	if err != nil || got == nil || got.Peer != prov.ID.String() || asked.Load() != 1 || lookups.Load() != 0 {
		t.Fatalf("a record not held: %v, %v after %d asks and %d lookups; want the bidder's own on one ask, no lookup", got, err, asked.Load(), lookups.Load())
	}
	// Held, fetched longer ago than market.refresh: no ask, no lookup.
	renter.Clock.Advance(10 * time.Minute)
	got, err = tr.BidRecord(ctx, prov.ID)
	if err != nil || got == nil || asked.Load() != 1 || lookups.Load() != 0 {
		t.Fatalf("a held record: %v, %v after %d asks and %d lookups; want it with no ask and no lookup", got, err, asked.Load(), lookups.Load())
	}
	// Expired: asked again (the bidder's record has expired too, so it
	// is refused, and the DHT is the last resort).
	renter.Clock.Advance(time.Hour)
	if _, err := tr.BidRecord(ctx, prov.ID); !errors.Is(err, ErrNotFound) || asked.Load() != 2 || lookups.Load() != 1 {
		t.Fatalf("an expired record: %v after %d asks and %d lookups; want not found after an ask and a lookup", err, asked.Load(), lookups.Load())
	}
	// A bidder that serves no records: straight to the DHT.
	if _, err := tr.BidRecord(ctx, silent.ID); !errors.Is(err, ErrNotFound) || lookups.Load() != 2 {
		t.Fatalf("a bidder serving nothing: %v after %d lookups; want not found after one more lookup", err, lookups.Load())
	}
}

// TestBidRecordIsBounded: a bidder nobody holds a record of holds its
// award up for at most bidRecordWait, its ask and its lookup together,
// not for a whole market search.
func TestBidRecordIsBounded(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	renter, stranger := peers[0], peers[1]
	tr := newTrust(t, renter)
	var deadline time.Time
	var had bool
	tr.fetchRecord = func(ctx context.Context, _ peer.ID) (*auction.Capacity, error) {
		deadline, had = ctx.Deadline()
		return nil, ErrNotFound
	}
	if _, err := tr.BidRecord(context.Background(), stranger.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a stranger's record: %v; want not found", err)
	}
	// The deadline was set during the call, so it is at most bidRecordWait
	// after the call's end.
	if end := time.Now(); !had || deadline.After(end.Add(bidRecordWait)) {
		t.Fatalf("the lookup's deadline: %v (set %v), %s after the call ended; want within %s", deadline, had, deadline.Sub(end), bidRecordWait)
	}
}
