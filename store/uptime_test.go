package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestUptimeRowsAreBounded: past the bound, a new provider's row makes
// room by dropping an eighth of the rows: the ones unheard for
// UptimeStale first, then those with the fewest heartbeats; a provider
// already counted never waits on the bound, and the count survives a
// reopening.
func TestUptimeRowsAreBounded(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	const limit = 16
	now := time.Unix(1_800_000_000, 0).UnixMilli()
	beat := func(db *DB, p string, atMs int64, times int) {
		t.Helper()
		for range times {
			if err := db.ObserveHeartbeat(p, atMs, limit); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two providers gone for over UptimeStale, with many heartbeats;
	// fourteen current ones, provider i with i+2 heartbeats.
	beat(db, "gone-0", now-UptimeStale.Milliseconds()-2, 100)
	beat(db, "gone-1", now-UptimeStale.Milliseconds()-1, 100)
	for i := range limit - 2 {
		beat(db, fmt.Sprintf("live-%02d", i), now, i+2)
	}
	beat(db, "live-00", now, 2) // an existing row: nothing made room
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir)
	defer db.Close()
	beat(db, "newcomer", now, 1)
	ups, err := db.Uptimes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range ups {
		got = append(got, u.Provider)
	}
	slices.Sort(got)
	// An eighth of 16 is 2, and one more for the newcomer: the two gone
	// and the current provider with the fewest heartbeats (live-01: 3;
	// live-00 has 2 + 2).
	var want []string
	for i := range limit - 2 {
		if i != 1 {
			want = append(want, fmt.Sprintf("live-%02d", i))
		}
	}
	want = append(want, "newcomer")
	if !slices.Equal(got, want) {
		t.Fatalf("rows kept\n got %q\nwant %q", got, want)
	}
}
