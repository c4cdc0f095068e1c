package auction

import (
	"strings"
	"testing"
)

// TestAdmitUnconfirmed: what a provider commits before a renter takes
// its awards up depends on the renter's paid history and abandons.
func TestAdmitUnconfirmed(t *testing.T) {
	lim := DefaultTakeUpLimits()
	idle := FreshLoad{TotalGPUs: 8}
	for _, tc := range []struct {
		name  string
		s     RenterStanding
		gpus  int
		fresh FreshLoad
		want  string // substring of the reason; "" admits
	}{
		{"fresh renter, nothing outstanding, whole provider", RenterStanding{}, 8, idle, ""},
		{"fresh renter, a burst of awards", RenterStanding{Unconfirmed: lim.FreshUnconfirmed - 1}, 1, idle, ""},
		{"fresh renter at its bound", RenterStanding{Unconfirmed: lim.FreshUnconfirmed}, 1, idle, "not taken up yet"},
		{"fresh renters hold the share", RenterStanding{}, 1, FreshLoad{Awards: 2, GPUs: 4, TotalGPUs: 8}, "renters without paid history hold 4"},
		{"one award over the share", RenterStanding{}, 3, FreshLoad{Awards: 1, GPUs: 2, TotalGPUs: 8}, "2 more GPUs"},
		{"after an abandon, the whole provider", RenterStanding{}, 8, FreshLoad{TotalGPUs: 8, Abandoned: true}, "4 more GPUs"},
		{"after an abandon, own awards count", RenterStanding{Unconfirmed: 1, UnconfirmedGPUs: 4}, 1, FreshLoad{TotalGPUs: 8, Abandoned: true}, "hold 4"},
		{"after an abandon, within the share", RenterStanding{}, 4, FreshLoad{TotalGPUs: 8, Abandoned: true}, ""},
		{"after an abandon, paid renters unbounded", RenterStanding{Paid: true}, 8, FreshLoad{Awards: 3, GPUs: 4, TotalGPUs: 8, Abandoned: true}, ""},
		{"fresh renters within the share", RenterStanding{}, 1, FreshLoad{Awards: 1, GPUs: 2, TotalGPUs: 8}, ""},
		{"paid renter, several outstanding", RenterStanding{Paid: true, Unconfirmed: 3}, 4, FreshLoad{Awards: 3, GPUs: 4, TotalGPUs: 8}, ""},
		{"paid renter at its bound", RenterStanding{Paid: true, Unconfirmed: lim.PaidUnconfirmed}, 1, idle, "not taken up yet"},
		{"paid but suspect counts as fresh", RenterStanding{Paid: true, Unconfirmed: lim.FreshUnconfirmed, Noted: 1}, 1, idle, "without paid history"},
		{"abandoned here twice", RenterStanding{Paid: true, Abandoned: 2}, 1, idle, "abandoned 2 awards here"},
		{"noted by three providers", RenterStanding{Noted: 3}, 1, idle, "at 3 providers"},
		{"abandoned here once, noted twice", RenterStanding{Abandoned: 1, Noted: 2}, 1, idle, "at 3 providers"},
		{"noted once still gets one award", RenterStanding{Noted: 1}, 1, idle, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lim.AdmitUnconfirmed(tc.s, tc.gpus, tc.fresh)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("AdmitUnconfirmed = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExpectedStayedSilent(t *testing.T) {
	for _, tc := range []struct {
		expected, answered int
		want               bool
	}{{0, 0, false}, {4, 0, true}, {4, 1, true}, {4, 2, false}, {200, 3, true}, {1, 1, false}} {
		if got := ExpectedStayedSilent(tc.expected, tc.answered); got != tc.want {
			t.Errorf("ExpectedStayedSilent(%d, %d) = %v", tc.expected, tc.answered, got)
		}
	}
}
