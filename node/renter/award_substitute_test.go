package renter

import (
	"slices"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// TestAwardAcceptsSubstitutedGPUs: bids hold nothing, so a provider may
// commit other GPUs than the award named. An acceptance naming as many
// GPUs is a lease on the GPUs it names; one naming fewer does not match
// the award, and the award passes to the next-best bid. (Sealing already
// refuses an acceptance that names a GPU twice.)
func TestAwardAcceptsSubstitutedGPUs(t *testing.T) {
	cases := []struct {
		name    string
		accept  []string
		winner  int // index of the provider that gets the lease
		wantErr string
	}{
		{name: "same_count_other_gpus", accept: []string{"GPU-sub-a", "GPU-sub-b"}, winner: 0},
		{name: "fewer_gpus", accept: []string{"GPU-sub-a"}, winner: 1, wantErr: "does not match the award"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _, provs := newRenter(t, 2)
			provs[0].accept = tc.accept
			spec, rfq, rfqID := rfqFor(t, r, 2)
			b1, id1 := bid(t, provs[0], rfq, rfqID, 2, 1.00)
			b2, id2 := bid(t, provs[1], rfq, rfqID, 2, 1.50)
			jobID := startAward(t, r, spec, rfq, rfqID, []*auction.Bid{b1, b2}, []string{id1, id2})
			j := waitJobState(t, r, jobID, lease.JobRunning)
			if len(j.Leases) != 1 {
				t.Fatalf("job names %d leases, want 1", len(j.Leases))
			}
			l, err := r.db.GetLease(j.Leases[0])
			if err != nil {
				t.Fatal(err)
			}
			want := provs[tc.winner]
			if l.Provider != want.ID.String() {
				t.Fatalf("lease on %s, want provider %d", l.Provider, tc.winner)
			}
			wantGPUs := tc.accept
			if tc.winner != 0 {
				wantGPUs = b2.GPUs
			}
			if !slices.Equal(l.GPUs, wantGPUs) {
				t.Fatalf("lease records GPUs %v, want the accepted %v", l.GPUs, wantGPUs)
			}
			if tc.wantErr != "" && !slices.ContainsFunc(j.Events, func(ev store.JobEvent) bool {
				return ev.Kind == "decline" && strings.Contains(ev.Message, tc.wantErr)
			}) {
				t.Fatalf("no decline event saying %q: %+v", tc.wantErr, j.Events)
			}
		})
	}
}
