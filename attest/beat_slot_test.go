package attest

import (
	"fmt"
	"testing"
	"time"
)

// TestBeatSlot: slots are every long for each provider, consecutive, and
// start at a phase of the provider's own, so a thousand providers' slot
// boundaries spread over the slot.
func TestBeatSlot(t *testing.T) {
	const every = 10 * time.Minute
	base := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, p := range []string{"12D3KooWA", "12D3KooWB", "x"} {
		s0 := BeatSlot(p, base, every)
		if got := BeatSlot(p, base+every.Milliseconds(), every); got != s0+1 {
			t.Errorf("%s: one slot later: %d, want %d", p, got, s0+1)
		}
		// Within one slot length, exactly one boundary is crossed or none.
		crossed := 0
		for ms := int64(0); ms < every.Milliseconds(); ms += 1000 {
			if BeatSlot(p, base+ms+1000, every) != BeatSlot(p, base+ms, every) {
				crossed++
			}
		}
		if crossed != 1 {
			t.Errorf("%s: %d boundaries in one slot length, want 1", p, crossed)
		}
		if got := BeatSlotsSpanned(p, base, base+every.Milliseconds()*6, every); got != 7 {
			t.Errorf("%s: spanned %d slots over an hour, want 7", p, got)
		}
		if got := BeatSlotsSpanned(p, base, base-1, every); got != 0 {
			t.Errorf("%s: a reversed span counts %d, want 0", p, got)
		}
		if BeatSlot(p, -1, every) != BeatSlot(p, 0, every) && BeatSlot(p, -1, every) != BeatSlot(p, 0, every)-1 {
			t.Errorf("%s: slots before 1970 do not floor", p)
		}
	}
	// Phases spread: of 1000 providers, the boundaries after base fall in
	// every tenth of the slot.
	var tenths [10]int
	for i := range 1000 {
		p := fmt.Sprintf("provider-%d", i)
		s := BeatSlot(p, base, every)
		lo, hi := int64(0), every.Milliseconds()
		for lo < hi { // first ms after base in the next slot
			mid := (lo + hi) / 2
			if BeatSlot(p, base+mid, every) > s {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		tenths[lo*10/every.Milliseconds()]++
	}
	for i, n := range tenths {
		if n < 50 || n > 150 {
			t.Errorf("tenth %d of the slot holds %d of 1000 providers' boundaries; want about 100", i, n)
		}
	}
	if BeatSlot("p", 12345, 0) != 12345 {
		t.Error("every <= 0: each millisecond is its own slot")
	}
}
