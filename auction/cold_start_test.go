package auction

import (
	"strings"
	"testing"
	"time"
)

const testModelID = "llama-3.1-8b@sha256:1111111111111111111111111111111111111111111111111111111111111111"

func TestColdStart(t *testing.T) {
	for _, tc := range []struct {
		sizeMiB uint64
		mbps    uint32
		want    time.Duration
	}{
		{1, 8, 1049 * time.Millisecond},                         // 8.39 Mbit at 8 Mbit/s, rounded up
		{15_258, 1000, 127_994 * time.Millisecond},              // a 16 GB model at 1 Gbit/s
		{15_258, 0, 1_279_934 * time.Millisecond},               // undeclared: DefaultModelBandwidthMbps
		{15_258, 1_000_000, 1280 * time.Millisecond},            // capped at MaxModelBandwidthMbps
		{MaxModelSizeMiB * 4, 1, ColdStart(MaxModelSizeMiB, 1)}, // size capped, no overflow
	} {
		if got := ColdStart(tc.sizeMiB, tc.mbps); got != tc.want {
			t.Errorf("ColdStart(%d MiB, %d Mbit/s) = %s, want %s", tc.sizeMiB, tc.mbps, got, tc.want)
		}
	}
}

// warmRFQ asks for one GPU for an hour to serve a 16 GB model.
func warmRFQ() *RFQ {
	r := matchRFQ()
	r.Resources.GPUs = 1
	r.ExpectedDurationSec = 3600
	r.Model = &ModelRef{ID: testModelID, SizeMiB: 15_258}
	return r
}

// TestWarmProviderWinsWhenTheColdStartCostsMore is the rule: a
// warm provider at 2.00 USD/h against a cold one at 1.80. At 100 Mbit/s
// the cold one needs 21 minutes of download (+36% of an hour's lease),
// more than its 10% discount saves, so the warm one wins; at 10 Gbit/s
// the download is 12.8 s and the cheaper cold one wins.
func TestWarmProviderWinsWhenTheColdStartCostsMore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		coldMbps uint32
		want     string
	}{
		{"slow cold provider", 100, "warm"},
		{"fast cold provider", 10_000, "cold"},
		{"undeclared bandwidth", 0, "warm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := MatchInput{
				RFQ: warmRFQ(), RFQID: testRFQID, Prior: 1, Now: fixedNow, Weights: DefaultWeights(),
				Bids: []*Bid{matchBid("warm", 2_000_000, 1), matchBid("cold", 1_800_000, 1)},
				ModelHosts: map[string]ModelHost{
					"warm": {Warm: true, BandwidthMbps: 100},
					"cold": {BandwidthMbps: tc.coldMbps},
				},
			}
			p := Match(in)
			if len(p.Allocations) != 1 || p.Allocations[0].Provider != tc.want {
				t.Fatalf("winner %s, want %s (plan %+v)", allocSummary(p), tc.want, p)
			}
			win := p.Allocations[0]
			if tc.want == "warm" {
				if win.ColdStart != 0 {
					t.Errorf("warm winner charged a cold start of %s", win.ColdStart)
				}
				lost := p.Losers[0]
				if lost.Provider != "cold" || lost.Code != RejectOutranked || !strings.Contains(lost.Reason, "cold start of") {
					t.Errorf("cold loser's reason does not name its cold start: %+v", lost)
				}
				return
			}
			if want := ColdStart(15_258, tc.coldMbps); win.ColdStart != want {
				t.Errorf("cold winner's ColdStart = %s, want %s", win.ColdStart, want)
			}
			if lost := p.Losers[0]; strings.Contains(lost.Reason, "cold start") {
				t.Errorf("warm loser's reason mentions a cold start: %q", lost.Reason)
			}
		})
	}
}

// TestColdStartChargeScales checks the charge against the rule's
// arithmetic and that it vanishes when the RFQ names no model, the
// weight is 0, or the lease is long enough to make the download nothing.
func TestColdStartChargeScales(t *testing.T) {
	run := func(rfq *RFQ, w Weights) float64 {
		in := MatchInput{RFQ: rfq, RFQID: testRFQID, Prior: 1, Now: fixedNow, Weights: w,
			Bids: []*Bid{matchBid("cold", 1_800_000, 1)}}
		p := Match(in)
		if len(p.Allocations) != 1 {
			t.Fatalf("no plan: %s", p.Unfilled)
		}
		return p.Allocations[0].EffectivePrice
	}
	w := PriceOnlyWeights()
	w.ColdStartCharge = 1
	cold := ColdStart(15_258, DefaultModelBandwidthMbps)
	want := 1_800_000 * (1 + cold.Seconds()/3600)
	if got := run(warmRFQ(), w); got != want {
		t.Errorf("effective price %.0f, want %.0f (1.80 USD/h plus %s of a 1 h lease)", got, want, cold)
	}
	noModel := warmRFQ()
	noModel.Model = nil
	if got := run(noModel, w); got != 1_800_000 {
		t.Errorf("no model named: effective price %.0f, want the bid's 1800000", got)
	}
	if got := run(warmRFQ(), PriceOnlyWeights()); got != 1_800_000 {
		t.Errorf("ColdStartCharge 0: effective price %.0f, want the bid's 1800000", got)
	}
	long := warmRFQ()
	long.ExpectedDurationSec = 1000 * 3600
	if got := run(long, w); got >= 1_800_000*1.001 {
		t.Errorf("a 1000 h lease: effective price %.0f, want within 0.1%% of 1800000", got)
	}
}

func TestModelHostOf(t *testing.T) {
	m := &ModelRef{ID: testModelID, SizeMiB: 1}
	rec := &Capacity{Host: Host{BandwidthMbps: 2500}, Models: []string{testModelID}}
	if got := ModelHostOf(m, rec); !got.Warm || got.BandwidthMbps != 2500 {
		t.Errorf("ModelHostOf(held) = %+v", got)
	}
	rec.Models = nil
	if got := ModelHostOf(m, rec); got.Warm || got.BandwidthMbps != 2500 {
		t.Errorf("ModelHostOf(not held) = %+v", got)
	}
	if got := ModelHostOf(m, nil); got != (ModelHost{}) {
		t.Errorf("ModelHostOf(no record) = %+v", got)
	}
}

func TestParseModelID(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in, want, err string
	}{
		{"Llama-3.1-8B@sha256:" + strings.ToUpper(hex), "llama-3.1-8b@sha256:" + hex, ""},
		{"bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", ""},
		{"llama", "", "neither a CID"},
		{"llama@" + hex, "", "sha256:<64 hex>"},
		{"llama@sha256:abc", "", "sha256:<64 hex>"},
		{"-x@sha256:" + hex, "", "starting with a letter or digit"},
		{"a b@sha256:" + hex, "", "letters, digits"},
		{strings.Repeat("x", MaxModelIDLen+1), "", "at most"},
	} {
		got, err := ParseModelID(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseModelID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseModelID(%q) error %v, want one containing %q", tc.in, err, tc.err)
		}
	}
	if IsModelID("Llama@sha256:" + hex) {
		t.Error("IsModelID accepted a name that is not lower case")
	}
}
