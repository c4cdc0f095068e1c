package auction

import (
	"strings"
	"testing"
	"time"
)

// TestTermsDefaultsStayVersion1: a bid or award with the default terms is
// written as version 1 without a terms field, so nodes that read only
// version 1 still read it; other terms make it version 2.
func TestTermsDefaultsStayVersion1(t *testing.T) {
	var b Bid
	b.SetTerms(DefaultLeaseTerms)
	if b.V != MessagesVersion || b.Terms != nil || b.LeaseTerms() != DefaultLeaseTerms {
		t.Fatalf("default terms: v %d, terms %v", b.V, b.Terms)
	}
	fast := DefaultLeaseTerms
	fast.WindowMs = 500
	b.SetTerms(fast)
	if b.V != TermsVersion || b.Terms == nil || b.LeaseTerms() != fast {
		t.Fatalf("other terms: v %d, terms %v", b.V, b.Terms)
	}
	var a Award
	if a.LeaseTerms() != DefaultLeaseTerms {
		t.Fatal("an award without terms does not read as the default terms")
	}
}

// TestTermsAllowance: one rule for both sides, the longer of window and
// voucher interval plus the grace.
func TestTermsAllowance(t *testing.T) {
	terms := LeaseTerms{WindowMs: 2000, VoucherMs: 500, GraceMs: 3000, Prepay: 2}
	if got := terms.Allowance(); got != 5*time.Second {
		t.Fatalf("allowance %s, want 5s", got)
	}
	if got := terms.Prepaid(); got != time.Second {
		t.Fatalf("prepaid %s, want 1s", got)
	}
}

// TestTermsLimitsAccept: a renter accepts any cadence, interval and grace
// within the bounds, but no more paid ahead, no looser energy tolerance
// and no more skew than its limits; the reason says which, in its words.
func TestTermsLimitsAccept(t *testing.T) {
	limits := TermsLimits{MaxPrepaid: time.Minute, MaxEnergyTolPermille: 150, MaxSkew: 2 * time.Minute}
	slow := DefaultLeaseTerms
	slow.WindowMs, slow.VoucherMs, slow.GraceMs = MaxTermsPeriodMs, MaxTermsPeriodMs, MaxTermsGraceMs
	if why := limits.Accepts(slow); why != "" {
		t.Fatalf("slow terms refused: %s", why)
	}
	for _, c := range []struct {
		name   string
		change func(*LeaseTerms)
		want   string
	}{
		{"prepay", func(l *LeaseTerms) { l.Prepay = 2 }, "2 voucher intervals (2m0s) paid ahead; this renter pays at most 1m0s ahead"},
		{"energy", func(l *LeaseTerms) { l.EnergyTolPermille = 200 }, "energy tolerance of 20.0%; this renter accepts at most 15.0%"},
		{"skew", func(l *LeaseTerms) { l.MaxSkewMs = 180_000 }, "clock skew of 3m0s; this renter accepts at most 2m0s"},
	} {
		terms := DefaultLeaseTerms
		c.change(&terms)
		if why := limits.Accepts(terms); !strings.Contains(why, c.want) {
			t.Errorf("%s: reason %q, want it to contain %q", c.name, why, c.want)
		}
	}
}

// TestMatcherRejectsUnacceptableTerms: a bid whose terms the renter cannot
// accept loses with RejectTerms and the reason, and the request goes to
// the bid whose terms it accepts.
func TestMatcherRejectsUnacceptableTerms(t *testing.T) {
	rfq := matchRFQ()
	greedy, fair := matchBid("greedy", 1_000_000, 4), matchBid("fair", 2_000_000, 4)
	terms := DefaultLeaseTerms
	terms.Prepay = 5
	greedy.SetTerms(terms)
	terms.Prepay, terms.WindowMs = 0, 500 // another cadence is fine
	fair.SetTerms(terms)
	in := matchInput(rfq, greedy, fair)
	in.Terms = &TermsLimits{MaxEnergyTolPermille: 150, MaxSkew: 2 * time.Minute}
	plan := Match(in)
	var lost *Rejection
	for i := range plan.Losers {
		if plan.Losers[i].BidIndex == 0 {
			lost = &plan.Losers[i]
		}
	}
	if lost == nil || lost.Code != RejectTerms || !strings.Contains(lost.Reason, "paid ahead") {
		t.Fatalf("bid 0 with prepaid terms: %+v", lost)
	}
	for _, a := range plan.Allocations {
		if a.BidIndex == 0 {
			t.Fatal("the bid with unacceptable terms won")
		}
	}
}
