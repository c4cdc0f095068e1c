package auction

import (
	"fmt"
	"testing"
	"time"
)

func TestModelAsksPopular(t *testing.T) {
	a := NewModelAsks()
	big := ModelRef{ID: "big@sha256:" + fmt.Sprintf("%064d", 1), SizeMiB: 500_000}
	hot := ModelRef{ID: "hot@sha256:" + fmt.Sprintf("%064d", 2), SizeMiB: 15_000}
	old := ModelRef{ID: "old@sha256:" + fmt.Sprintf("%064d", 3), SizeMiB: 15_000}
	for i := range 3 {
		a.Note(big, fmt.Sprint("r", i), fixedNow)
		a.Note(hot, fmt.Sprint("r", i), fixedNow)
		a.Note(hot, fmt.Sprint("r", i), fixedNow) // asking twice counts once
		a.Note(old, fmt.Sprint("r", i), fixedNow.Add(-48*time.Hour))
	}
	got := a.Popular(fixedNow, 24*time.Hour, 3, 100_000)
	if len(got) != 1 || got[0].Model != hot || got[0].Renters != 3 {
		t.Fatalf("Popular = %+v, want only %s asked by 3 (big is over the size cap, old outside the window)", got, hot.ID)
	}
	if got := a.Popular(fixedNow, 24*time.Hour, 4, 100_000); len(got) != 0 {
		t.Errorf("Popular with 4 renters needed = %+v", got)
	}
}

// TestModelAsksBounded: a flood of models and renters keeps at most
// MaxModelAsks models and MaxAskRenters renters per model, forgetting the
// least recent.
func TestModelAsksBounded(t *testing.T) {
	a := NewModelAsks()
	for i := range MaxModelAsks * 3 {
		m := ModelRef{ID: fmt.Sprintf("m%d@sha256:%064d", i, i), SizeMiB: 1}
		a.Note(m, "r", fixedNow.Add(time.Duration(i)*time.Second))
	}
	if len(a.models) != MaxModelAsks {
		t.Fatalf("%d models kept, want %d", len(a.models), MaxModelAsks)
	}
	if _, ok := a.models[fmt.Sprintf("m%d@sha256:%064d", 0, 0)]; ok {
		t.Error("the least recently asked model was kept")
	}
	m := ModelRef{ID: "x@sha256:" + fmt.Sprintf("%064d", 9), SizeMiB: 1}
	for i := range MaxAskRenters * 3 {
		a.Note(m, fmt.Sprint("renter", i), fixedNow.Add(time.Hour+time.Duration(i)*time.Second))
	}
	if n := len(a.models[m.ID].renters); n != MaxAskRenters {
		t.Errorf("%d renters kept, want %d", n, MaxAskRenters)
	}
	if got := a.Popular(fixedNow.Add(2*time.Hour), 24*time.Hour, 1, 1); len(got) == 0 || got[0].Model.ID != m.ID || got[0].Renters != MaxAskRenters {
		t.Errorf("Popular first = %+v, want %s with %d renters", got, m.ID, MaxAskRenters)
	}
}
