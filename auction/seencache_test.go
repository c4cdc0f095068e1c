package auction

import (
	"fmt"
	"testing"
	"time"
)

func TestSeenCache(t *testing.T) {
	at := func(ms int64) time.Time { return fixedNow.Add(time.Duration(ms) * time.Millisecond) }
	exp := func(ms int64) int64 { return fixedNow.UnixMilli() + ms }
	type op struct {
		id     string
		expMs  int64 // relative to fixedNow
		nowMs  int64 // relative to fixedNow
		seen   bool  // want
		lenNow int   // want Len after the op
	}
	for _, tc := range []struct {
		name string
		max  int
		ops  []op
	}{
		{"first_sight_then_replay", 4, []op{
			{"a", 1000, 0, false, 1}, {"a", 1000, 10, true, 1}, {"b", 1000, 20, false, 2},
		}},
		{"forgotten_after_expiry", 4, []op{
			{"a", 1000, 0, false, 1}, {"a", 1000, 999, true, 1},
			// At its expiry the entry is dropped; the caller's own expiry
			// check rejects the message from then on.
			{"a", 1000, 1000, false, 0},
		}},
		{"expired_on_arrival_not_recorded", 4, []op{
			{"a", 100, 100, false, 0}, {"a", 100, 100, false, 0},
		}},
		{"expired_entries_swept", 4, []op{
			{"a", 100, 0, false, 1}, {"b", 200, 0, false, 2}, {"c", 5000, 0, false, 3},
			{"d", 5000, 300, false, 2},
		}},
		{"full_evicts_soonest_to_expire", 2, []op{
			{"long", 9000, 0, false, 1}, {"short", 1000, 0, false, 2},
			{"new", 5000, 10, false, 2}, // evicts "short"
			{"long", 9000, 20, true, 2},
			{"new", 5000, 30, true, 2},
			{"short", 1000, 40, false, 2}, // forgotten: recorded again, evicting "new"
			{"new", 5000, 50, false, 2},
		}},
		{"capacity_one", 1, []op{
			{"a", 1000, 0, false, 1}, {"b", 1000, 0, false, 1}, {"a", 1000, 0, false, 1}, {"a", 1000, 0, true, 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewSeenCache(tc.max)
			for i, o := range tc.ops {
				if got := c.Seen(o.id, exp(o.expMs), at(o.nowMs)); got != o.seen {
					t.Errorf("op %d Seen(%q) = %v, want %v", i, o.id, got, o.seen)
				}
				if got := c.Len(); got != o.lenNow {
					t.Errorf("op %d Len = %d, want %d", i, got, o.lenNow)
				}
			}
		})
	}
}

func TestSeenCacheBounded(t *testing.T) {
	c := NewSeenCache(100)
	for i := range 10_000 {
		c.Seen(fmt.Sprint(i), fixedNow.UnixMilli()+int64(i%977)+1, fixedNow)
		if c.Len() > 100 {
			t.Fatalf("Len = %d after %d inserts", c.Len(), i+1)
		}
	}
}

func TestNewSeenCachePanicsOnZero(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewSeenCache(0) did not panic")
		}
	}()
	NewSeenCache(0)
}

// TestSeenCacheConcurrent: gossipsub runs validators concurrently; run with
// -race. Exactly one of many concurrent sightings of an ID is first.
func TestSeenCacheConcurrent(t *testing.T) {
	c := NewSeenCache(1000)
	firsts := make(chan bool, 64)
	for range 64 {
		go func() { firsts <- !c.Seen("rfq-1", fixedNow.UnixMilli()+1000, fixedNow) }()
	}
	n := 0
	for range 64 {
		if <-firsts {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d goroutines saw the ID first, want 1", n)
	}
}
