package auction

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEvidenceLevels: a digest's provider counts as backed only while a
// matched record is current, as proven only once seen to bid, and falls
// silent after SilentAfter misses in a row, for SilentFor.
func TestEvidenceLevels(t *testing.T) {
	now := fixedNow
	for _, tc := range []struct {
		name                   string
		ev                     ProviderEvidence
		backed, proven, silent bool
		weight                 float64
	}{
		{"nothing", ProviderEvidence{}, false, false, false, 0},
		{"bids without a record", ProviderEvidence{Bids: 9, Won: 3}, false, false, false, 0},
		{"record expired", ProviderEvidence{RecordUntil: now, Bids: 1}, false, false, false, 0},
		{"record", ProviderEvidence{RecordUntil: now.Add(time.Minute)}, true, false, false, 1.0 / 7},
		{"record and a bid here", ProviderEvidence{RecordUntil: now.Add(time.Minute), Bids: 1}, true, true, false, 2.0 / 7},
		{"record and an accepted award", ProviderEvidence{RecordUntil: now.Add(time.Minute), Won: 1}, true, true, false, 2.0 / 7},
		{"record and receipts", ProviderEvidence{RecordUntil: now.Add(time.Minute), Receipts: 10}, true, true, false, 4.0 / 7},
		{"record and a renter's word", ProviderEvidence{RecordUntil: now.Add(time.Minute), Vouched: 1}, true, true, false, 2.0 / 7},
		{"everything", ProviderEvidence{RecordUntil: now.Add(time.Minute), Receipts: 3, Won: 1, Bids: 1, Reachable: true}, true, true, false, 1},
		{"missed twice", ProviderEvidence{RecordUntil: now.Add(time.Minute), Missed: SilentAfter - 1, LastMiss: now}, true, false, false, 1.0 / 7},
		{"silent", ProviderEvidence{RecordUntil: now.Add(time.Minute), Missed: SilentAfter, LastMiss: now.Add(-time.Minute)}, true, false, true, 1.0 / 7},
		{"silence forgiven", ProviderEvidence{RecordUntil: now.Add(time.Minute), Missed: SilentAfter, LastMiss: now.Add(-SilentFor)}, true, false, false, 1.0 / 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ev.Backed(now); got != tc.backed {
				t.Errorf("Backed = %v", got)
			}
			if got := tc.ev.Proven(now); got != tc.proven {
				t.Errorf("Proven = %v", got)
			}
			if got := tc.ev.Silent(now); got != tc.silent {
				t.Errorf("Silent = %v", got)
			}
			if got := tc.ev.Weight(now); got != tc.weight {
				t.Errorf("Weight = %v, want %v", got, tc.weight)
			}
		})
	}
}

// TestDigestMatchesRecord: a record backs a digest of its own provider,
// current, serving every shard the digest claims, older or newer than the
// record the digest names.
func TestDigestMatchesRecord(t *testing.T) {
	rec := func() *Capacity {
		c := fixtureCapacity(t, 3)
		c.Seq = 5
		return c
	}
	digest := func(c *Capacity) *Digest {
		d, err := NewDigest(DigestInput{Capacity: c, Seq: 1, Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name  string
		edit  func(c *Capacity, d *Digest)
		wants string
	}{
		{"matching", func(*Capacity, *Digest) {}, ""},
		{"newer record", func(c *Capacity, _ *Digest) { c.Seq = 9 }, ""},
		{"older record, same shards", func(c *Capacity, _ *Digest) { c.Seq = 4 }, ""},
		{"expired record", func(c *Capacity, _ *Digest) { c.ExpiresAtMs = fixedNow.UnixMilli() }, "expired"},
		{"another provider's", func(c *Capacity, _ *Digest) { c.Peer = "someone-else" }, "the record is"},
		{"a family the record lacks", func(_ *Capacity, d *Digest) {
			d.Models = append(d.Models, DigestModel{Model: "zz-fake-8gb", VRAMMiB: 8192, ComputeCap: "9.0", Total: 8, Free: 8})
		}, "claims shard gpu/zz-fake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rec()
			d := digest(c)
			tc.edit(c, d)
			err := DigestMatchesRecord(d, c, fixedNow)
			if tc.wants == "" && err != nil || tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)) {
				t.Fatalf("DigestMatchesRecord = %v, want %q", err, tc.wants)
			}
		})
	}
}

// TestBidders: a summary vouches for the cheapest MaxSummaryBidders
// providers that bid, each once, sorted by peer ID.
func TestBidders(t *testing.T) {
	var bids []*Bid
	for i := range MaxSummaryBidders + 10 {
		p := fmt.Sprintf("p%03d", (i*31)%(MaxSummaryBidders+10))
		bids = append(bids, &Bid{Provider: p, PriceMicro: uint64(1000 + i)}, &Bid{Provider: p, PriceMicro: uint64(5000 + i)})
	}
	got := Bidders(bids)
	if len(got) != MaxSummaryBidders || !slices.IsSorted(got) {
		t.Fatalf("Bidders: %d, sorted %v", len(got), slices.IsSorted(got))
	}
	dearest := fmt.Sprintf("p%03d", ((MaxSummaryBidders+9)*31)%(MaxSummaryBidders+10))
	if slices.Contains(got, dearest) {
		t.Fatalf("the dearest bidder %s is listed", dearest)
	}
}
