package renter

import (
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// TestGoldNeedsBadge: with market.gold_needs_badge on, a provider without
// history cannot win gold work (the job ends unfilled and says why), while
// the same provider wins bronze work. (It was a cluster test; the rule is
// the renter's alone.)
func TestGoldNeedsBadge(t *testing.T) {
	r, _, provs := newRenterWith(t, 1, func(c *Config) { c.GoldNeedsBadge = true })
	for _, tc := range []struct {
		tier auction.Tier
		want string
	}{{auction.TierBronze, lease.JobRunning}, {auction.TierGold, lease.JobUnfilled}} {
		spec, rfq, rfqID := rfqTier(t, r, 1, tc.tier)
		b, id := bid(t, provs[0], rfq, rfqID, 1, 1.00)
		jobID := startAward(t, r, spec, rfq, rfqID, []*auction.Bid{b}, []string{id})
		j := waitJobState(t, r, jobID, lease.JobRunning, lease.JobUnfilled)
		if j.State != tc.want {
			t.Fatalf("%s job from a new provider: %s %q, want %s", tc.tier, j.State, j.Reason, tc.want)
		}
		if tc.tier == auction.TierGold && !strings.Contains(j.Reason+eventText(j.Events), "badge") {
			t.Fatalf("gold job unfilled without naming the badge: %q %+v", j.Reason, j.Events)
		}
	}
}

// eventText joins a job's event messages.
func eventText(evs []store.JobEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Kind + ": " + e.Message + "\n")
	}
	return b.String()
}
