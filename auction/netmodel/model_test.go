package netmodel

import (
	"math"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestPrintScaleTable prints the table of docs/benchmarks.md:
//
//	go test ./auction/netmodel -run TestPrintScaleTable -v
func TestPrintScaleTable(t *testing.T) {
	sz, err := MeasureSizes()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ScaleTable()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sealed sizes: RFQ %d B, bid %d B, digest %d B", sz.RFQ, sz.Bid, sz.Digest)
	t.Logf("\n%s", FormatTable(rows))
	p, err := DefaultParams(100_000, 100)
	if err != nil {
		t.Fatal(err)
	}
	p.RegionGroups = 4
	what, err := Model(p)
	if err != nil {
		t.Fatal(err)
	}
	p.DigestRefresh = time.Hour
	slow, err := Model(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("what-if, 4 region groups per family; then also a 60 min digest refresh:\n%s", FormatTable([]Row{what, slow}))
}

func TestMeasureSizes(t *testing.T) {
	sz, err := MeasureSizes()
	if err != nil {
		t.Fatal(err)
	}
	if sz.RFQ <= 0 || sz.RFQ > auction.MaxRFQSize || sz.Bid <= 0 || sz.Bid > auction.MaxBidSize || sz.Digest <= 0 || sz.Digest > auction.MaxDigestSize {
		t.Errorf("sizes %+v outside the kinds' limits", sz)
	}
}

// The model's numbers hang together: bids per RFQ are the selection rule's
// expectation, traffic is the sum of its parts, bytes follow copies, and
// more providers or RFQs never cost less.
func TestModelConsistent(t *testing.T) {
	rows, err := ScaleTable()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if want := float64(min(auction.DefaultWantBids, r.ShardProviders)); r.ExpectedBids != want {
			t.Errorf("row %d: expected bids %.2f, want %.0f", i, r.ExpectedBids, want)
		}
		if math.Abs(r.BidsPerRFQ-r.ExpectedBids) > 0.25*r.ExpectedBids {
			t.Errorf("row %d: drawn %.2f bids per RFQ, expected %.2f", i, r.BidsPerRFQ, r.ExpectedBids)
		}
		if sum := r.RFQKBps + r.DigestKBps + r.BidKBps; math.Abs(sum-r.ProviderKBps) > 1e-9 {
			t.Errorf("row %d: parts %.3f, total %.3f", i, sum, r.ProviderKBps)
		}
		// Bids sent by all shard providers are the bids the shard's RFQs draw.
		if got := r.BidsSent * float64(r.ShardProviders); math.Abs(got-r.ShardRFQsPerSec*r.ExpectedBids) > 1e-6 {
			t.Errorf("row %d: %.3f bids/s sent, %.3f drawn", i, got, r.ShardRFQsPerSec*r.ExpectedBids)
		}
		if i%3 > 0 && (r.ProviderKBps <= rows[i-1].ProviderKBps || r.RFQCopies <= rows[i-1].RFQCopies) {
			t.Errorf("row %d: more RFQs cost no more", i)
		}
		if i >= 3 && r.DigestKBps <= rows[i-3].DigestKBps {
			t.Errorf("row %d: more providers cost no more digest traffic", i)
		}
	}
	p, err := DefaultParams(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := Model(p)
	if err != nil {
		t.Fatal(err)
	}
	if idle.RFQKBps != 0 || idle.BidKBps != 0 || idle.DigestKBps <= 0 {
		t.Errorf("no RFQs: %+v", idle)
	}
	if _, err := Model(Params{}); err == nil {
		t.Error("zero params accepted")
	}
}

// Calibration against BenchmarkAuction (docs/benchmarks.md): one A10
// family, 48 and 198 providers. Without selection every feasible provider
// bids (measured 48.0 of 48 and 174.7 of 198, the latter with a saturated
// CPU dropping some); with it, min(want_bids, providers).
func TestModelCalibration(t *testing.T) {
	for _, n := range []int{48, 198} {
		p, err := DefaultParams(n, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Families = []FamilyShare{{"a10", 1}}
		r, err := Model(p)
		if err != nil {
			t.Fatal(err)
		}
		if r.EveryoneBids != n || r.ExpectedBids != auction.DefaultWantBids {
			t.Errorf("%d providers: everyone %d, expected %.1f", n, r.EveryoneBids, r.ExpectedBids)
		}
	}
}
