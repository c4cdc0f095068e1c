package renter

import (
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// TestUnacceptableTermsLoseTheBid: a bid whose lease terms ask more of the
// renter than it accepts (an energy tolerance of 30% where its [attest]
// allows 15%) loses, and the unfilled job says so in the renter's terms;
// the same bid with the default terms wins. (It was a cluster test; the
// rule is the renter's matcher alone.)
func TestUnacceptableTermsLoseTheBid(t *testing.T) {
	r, _, provs := newRenter(t, 1)
	for _, c := range []struct {
		tolPermille uint32
		want        string
	}{{300, lease.JobUnfilled}, {150, lease.JobRunning}} {
		spec, rfq, rfqID := rfqFor(t, r, 1)
		b, _ := bid(t, provs[0], rfq, rfqID, 1, 1.00)
		terms := auction.DefaultLeaseTerms
		terms.EnergyTolPermille = c.tolPermille
		b.SetTerms(terms)
		raw, err := auction.SealBid(b, provs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		jobID := startAward(t, r, spec, rfq, rfqID, []*auction.Bid{b}, []string{attest.RecordID(raw).String()})
		j := waitJobState(t, r, jobID, lease.JobRunning, lease.JobUnfilled)
		if j.State != c.want {
			t.Fatalf("a bid asking an energy tolerance of %d permille: job %s %q, want %s", c.tolPermille, j.State, j.Reason, c.want)
		}
		want := "its lease terms ask an energy tolerance of 30.0%; this renter accepts at most 15.0%"
		if j.State == lease.JobUnfilled && (!strings.Contains(j.Reason, auction.RejectTerms) || !strings.Contains(j.Reason, want)) {
			t.Fatalf("job unfilled with %q, want it to name %q and %q", j.Reason, auction.RejectTerms, want)
		}
	}
}
