package auction

import (
	"testing"
	"time"
)

// TestDigestRefresh: a small shard refreshes at the base period; a large
// one stretches the refresh so its providers' refreshes stay within the
// budget, up to the cap; the base wins over a cap below it.
func TestDigestRefresh(t *testing.T) {
	for _, c := range []struct {
		n          int
		base, most time.Duration
		want       time.Duration
	}{
		{0, time.Minute, 10 * time.Minute, time.Minute},
		{48, time.Minute, 10 * time.Minute, time.Minute},
		{120, time.Minute, 10 * time.Minute, time.Minute},
		{600, time.Minute, 10 * time.Minute, 5 * time.Minute},
		{20_000, time.Minute, 10 * time.Minute, 10 * time.Minute},
		{20_000, 5 * time.Second, 10 * time.Second, 10 * time.Second},
		{20_000, time.Minute, 20 * time.Second, time.Minute},
	} {
		got := DigestRefresh(c.n, c.base, c.most)
		if got != c.want {
			t.Errorf("DigestRefresh(%d, %v, %v) = %v, want %v", c.n, c.base, c.most, got, c.want)
		}
		// Within the budget wherever the cap allows it.
		if rate := float64(c.n) / got.Seconds(); got < c.most && got > c.base && rate > DigestRefreshBudget+1e-9 {
			t.Errorf("%d providers refreshing every %v cost %.2f digests/s, over the budget", c.n, got, rate)
		}
	}
}
