package auction

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// calendarHost is one host of a hand-made shard: a capacity record whose
// calendar (if closeIn > 0) closes closeIn after fixedNow, and its digest
// at fixedNow.
type calendarHost struct {
	cap    *Capacity
	digest *Digest
}

// calendarShard builds n A10 hosts of gpus GPUs each, with silver floors
// from floorMicro up by 10,000 uUSD each, closing closeIn after fixedNow
// (0: no calendar). Keys are seeded from seed up.
func calendarShard(t *testing.T, seed, n, gpus int, floorMicro uint64, closeIn time.Duration) []calendarHost {
	t.Helper()
	var out []calendarHost
	for i := range n {
		_, id := testKey(t, byte(seed+i))
		c := &Capacity{
			V: CapacityVersion, Peer: id.String(), Seq: 1,
			IssuedAtMs: fixedNow.UnixMilli(), ExpiresAtMs: fixedNow.Add(time.Hour).UnixMilli(),
			Host: Host{CPUCores: 64, RAMMiB: 256 << 10, DiskGiB: 1000}, Region: Region{Country: "de"},
			Reachability: ReachPublic, Runtimes: []string{RuntimeDocker},
			Floor:  FloorPrice{Silver: floorMicro + uint64(i)*10_000},
			Policy: Policy{Tiers: []Tier{TierSilver}},
		}
		if closeIn > 0 {
			end := fixedNow.Add(closeIn) // fixedNow is a Monday
			c.Calendar = []Window{{Day: time.Monday, StartMin: 0, EndMin: uint16(end.Hour()*60 + end.Minute()), FactorPermille: 1000}}
		}
		for g := range gpus {
			c.GPUs = append(c.GPUs, GPU{Index: uint32(g), UUID: fmt.Sprintf("GPU-%s-%d", id, g), Model: "a10-24gb",
				VRAMMiB: 24 << 10, ComputeCap: "8.6", Free: true})
		}
		d, err := NewDigest(DigestInput{Capacity: c, Seq: 1, Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, calendarHost{cap: c, digest: d})
	}
	return out
}

// calendarRFQ is a silver A10 job of gpus GPUs expected to run dur.
func calendarRFQ(gpus uint32, dur time.Duration, want uint32) *RFQ {
	return &RFQ{
		V: MessagesVersion, Renter: "renter", JobCID: "bafyjob", IssuedAtMs: fixedNow.UnixMilli(),
		Resources: Resources{GPUs: gpus, Models: []string{"a10"}}, Runtime: RuntimeDocker, Tier: TierSilver,
		MaxPriceMicro: 10_000_000, ExpectedDurationSec: uint64(dur / time.Second), MaxDurationSec: uint64(2 * dur / time.Second),
		BidWindowMs: 1000, Pricing: PayBid, WantBids: want,
	}
}

// bidsFrom runs Quote for the hosts named (nil: all) and returns the bids.
func bidsFrom(hosts []calendarHost, r *RFQ, rfqID string, names func(string) bool) []*Bid {
	var bids []*Bid
	for _, h := range hosts {
		if names != nil && !names(h.cap.Peer) {
			continue
		}
		q, err := Quote(QuoteInput{RFQ: r, RFQID: rfqID, Capacity: h.cap, Now: fixedNow, Policy: DefaultBidPolicy()})
		if err == nil {
			bids = append(bids, &q.Bid)
		}
	}
	return bids
}

func digestsOf(hosts []calendarHost) []*Digest {
	out := make([]*Digest, len(hosts))
	for i, h := range hosts {
		out[i] = h.digest
	}
	return out
}

// TestBoundedBidsWithClosingCalendars: the cheapest half of a shard is
// open now but closes in 30 minutes, too soon for a 2-hour job, so those
// hosts refuse it. The bids an RFQ draws (selected hosts whose Quote
// bids) stay within 2x want_bids, and about want_bids on average: hosts
// about to close neither fill the always-bid prefix nor dilute the
// others' chance.
func TestBoundedBidsWithClosingCalendars(t *testing.T) {
	hosts := append(calendarShard(t, 10, 40, 1, 1_000_000, 30*time.Minute), calendarShard(t, 60, 40, 1, 2_000_000, 0)...)
	const want = 16
	r := calendarRFQ(1, 2*time.Hour, want)
	in := BidSelectInput{RFQ: r, Shard: GPUShard("a10"), Digests: digestsOf(hosts), Now: fixedNow}
	const rfqs = 200
	total := 0
	for i := range rfqs {
		in.RFQID = fmt.Sprintf("rfq-%d", i)
		sel := SelectBidders(in)
		n := len(bidsFrom(hosts, r, in.RFQID, sel.Includes))
		if n > 2*want {
			t.Errorf("%s drew %d bids, over 2 x want_bids %d", in.RFQID, n, want)
		}
		total += n
	}
	if mean := float64(total) / rfqs; mean < 0.75*want || mean > 1.25*want {
		t.Errorf("%.1f bids per RFQ on average, want about %d", mean, want)
	}
	if sel := SelectBidders(in); sel.Feasible != 40 || sel.Closing != 40 {
		t.Errorf("feasible %d, closing %d: want 40 and 40", sel.Feasible, sel.Closing)
	}
	// A provider about to close does not select itself.
	in.RFQID = "rfq-0"
	if ok, _ := ShouldBid(in, hosts[0].cap.Peer); ok {
		t.Error("the cheapest host, closing in 30 minutes, selected itself for a 2-hour job")
	}
	// A job short enough for the closing hosts gives them their prefix back.
	in.RFQ = calendarRFQ(1, 20*time.Minute, want)
	if sel := SelectBidders(in); sel.Feasible != 80 || !slices.Contains(sel.Always, hosts[0].cap.Peer) {
		t.Errorf("a 20-minute job: feasible %d, prefix %v", sel.Feasible, sel.Always)
	}
}

// TestBoundedSixteenGPUJobPlacedAsEveryoneBids: ten cheap 4-GPU hosts
// close in an hour, ten dearer ones stay open; a 16-GPU job expected to
// run four hours is placed, with bounded bids, on the same hosts at the
// same prices as when every host bids, whatever the RFQ's coins.
func TestBoundedSixteenGPUJobPlacedAsEveryoneBids(t *testing.T) {
	hosts := append(calendarShard(t, 10, 10, 4, 1_000_000, time.Hour), calendarShard(t, 30, 10, 4, 2_000_000, 0)...)
	r := calendarRFQ(16, 4*time.Hour, RFQWantBids(DefaultWantBids, 16, 1, 1))
	plan := func(rfqID string, bids []*Bid) []string {
		p := Match(MatchInput{RFQ: r, RFQID: rfqID, Bids: bids, Prior: 0.8, Now: fixedNow.Add(time.Second), Weights: PriceOnlyWeights()})
		if p.Unfilled != "" {
			return []string{"unfilled: " + p.Unfilled}
		}
		var out []string
		for _, a := range p.Allocations {
			out = append(out, fmt.Sprintf("%d GPUs at %d", len(a.GPUs), a.PriceMicro)) // floors are distinct
		}
		slices.Sort(out)
		return out
	}
	for i := range 20 {
		rfqID := fmt.Sprintf("rfq-%d", i)
		every := plan(rfqID, bidsFrom(hosts, r, rfqID, nil))
		if len(every) != 4 {
			t.Fatalf("everyone bids: plan %v, want the 4 cheapest open hosts", every)
		}
		sel := SelectBidders(BidSelectInput{RFQ: r, RFQID: rfqID, Shard: GPUShard("a10"), Digests: digestsOf(hosts), Now: fixedNow})
		bids := bidsFrom(hosts, r, rfqID, sel.Includes)
		if got := plan(rfqID, bids); !slices.Equal(got, every) {
			t.Errorf("%s: bounded plan %v, everyone bids %v", rfqID, got, every)
		}
		if len(bids) > 2*r.WantedBids() {
			t.Errorf("%s: %d bids, over 2 x want_bids %d", rfqID, len(bids), r.WantedBids())
		}
	}
}
