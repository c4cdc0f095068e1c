package provider

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestPrestageFetchesPopularModels: a model asked for by enough renters
// is fetched once, with its ID, size and the models directory appended to
// the command; one held already, one too big and one asked by too few are
// not; the day's budget stops further fetches.
func TestPrestageFetchesPopularModels(t *testing.T) {
	id := func(name string) string { return name + "@sha256:" + strings.Repeat("c", 64) }
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var runs [][]string
	held := []string{id("held")}
	changed := 0
	p := newPrestager(prestagerDeps{
		log: slog.New(slog.DiscardHandler), now: func() time.Time { return now },
		cfg: PrestageConfig{Command: []string{"fetch-model", "--verify"}, MinRenters: 2, MaxGiB: 20, PerDay: 2},
		dir: "/models", held: func() []string { return held }, fetched: func() { changed++ },
		command: func(_ context.Context, argv []string) error {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, argv)
			held = append(held, argv[2])
			return nil
		},
	})
	ask := func(name string, sizeMiB uint64, renters int) {
		for i := range renters {
			p.noteRFQ(&auction.RFQ{Renter: fmt.Sprint("renter", i), Model: &auction.ModelRef{ID: id(name), SizeMiB: sizeMiB}})
		}
	}
	ask("held", 1000, 5)
	ask("huge", 30<<10, 5)
	ask("rare", 1000, 1)
	ask("hot", 16<<10, 3)
	ask("warmish", 2000, 2)
	ctx := t.Context()
	var fetched []string
	for range 4 {
		got, err := p.fetchOne(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != "" {
			fetched = append(fetched, got)
		}
	}
	if want := []string{id("hot"), id("warmish")}; !slices.Equal(fetched, want) {
		t.Fatalf("fetched %v, want %v (most asked first, then the budget of 2 a day)", fetched, want)
	}
	if want := []string{"fetch-model", "--verify", id("hot"), "16384", "/models"}; !slices.Equal(runs[0], want) {
		t.Errorf("command %v, want %v", runs[0], want)
	}
	if changed != 2 {
		t.Errorf("record re-published %d times, want 2", changed)
	}
	now = now.Add(25 * time.Hour) // a new day, but the asks are a day old
	if got, _ := p.fetchOne(ctx); got != "" {
		t.Errorf("fetched %s on asks older than the window", got)
	}
}

// TestPrestageOff: without a command nothing is recorded or run.
func TestPrestageOff(t *testing.T) {
	p := newPrestager(prestagerDeps{log: slog.New(slog.DiscardHandler), now: time.Now, dir: "/models",
		held:    func() []string { return nil },
		command: func(context.Context, []string) error { t.Fatal("ran a command with pre-staging off"); return nil }})
	p.noteRFQ(&auction.RFQ{Renter: "r", Model: &auction.ModelRef{ID: "m@sha256:" + strings.Repeat("d", 64), SizeMiB: 1}})
	if got := p.asks.Popular(time.Now(), time.Hour, 1, 1<<20); len(got) != 0 {
		t.Errorf("recorded asks with pre-staging off: %+v", got)
	}
}
