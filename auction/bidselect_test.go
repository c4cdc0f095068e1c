package auction

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// selRFQ asks for need A10-family GPUs, silver, at most 3 USD/GPU-h.
func selRFQ(need, want int) *RFQ {
	return &RFQ{
		Resources: Resources{GPUs: uint32(need), Models: []string{"a10"}}, Runtime: RuntimeDocker,
		Tier: TierSilver, MaxPriceMicro: 3_000_000, ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: uint32(want),
	}
}

// selDigest is a provider on gpu/a10 with free of 8 GPUs at floor (silver).
func selDigest(peer string, free uint32, floor uint64) *Digest {
	return &Digest{
		Peer: peer, Seq: 1, Region: Region{Country: "de"}, Runtimes: []string{RuntimeDocker},
		Host: Host{CPUCores: 32, RAMMiB: 128 << 10, DiskGiB: 1000}, Floor: FloorPrice{Silver: floor},
		Models: []DigestModel{{Model: "a10-24gb", VRAMMiB: 23028, ComputeCap: "8.6", Total: 8, Free: free}},
	}
}

// selShard builds n providers with prices spread 1.0..4.0 USD (some above
// the RFQ's maximum) and 0..8 free GPUs (some full).
func selShard(rng *rand.Rand, n int) []*Digest {
	out := make([]*Digest, n)
	for i := range out {
		out[i] = selDigest(fmt.Sprintf("p%06d", i), uint32(rng.IntN(9)), 1_000_000+uint64(rng.IntN(3_000_001)))
	}
	return out
}

func selCount(s BidSelection) int { return len(s.Always) + len(s.Sampled) }

// The expected number of bids is want_bids at every shard size, and the
// drawn number stays within 2x of it.
func TestSelectBiddersScale(t *testing.T) {
	const want, need = 16, 2
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{10, 100, 1_000, 10_000, 100_000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			view := selShard(rng, size)
			rfqs := 200
			if size >= 10_000 {
				rfqs = 20
			}
			in := BidSelectInput{RFQ: selRFQ(need, want), Shard: GPUShard("a10"), Digests: view}
			sum := 0
			var sel BidSelection
			for i := range rfqs {
				in.RFQID = fmt.Sprintf("rfq-%d", i)
				sel = SelectBidders(in)
				target := min(want, sel.Feasible)
				if sel.Expected != float64(max(target, len(sel.Always))) {
					t.Fatalf("expected %.2f bids, want %d (always %d, feasible %d)", sel.Expected, target, len(sel.Always), sel.Feasible)
				}
				if got := selCount(sel); got > 2*want || got < target/2 {
					t.Errorf("%s: %d bids, target %d", in.RFQID, got, target)
				}
				sum += selCount(sel)
			}
			mean := float64(sum) / float64(rfqs)
			if target := float64(min(want, sel.Feasible)); math.Abs(mean-target) > 0.15*target {
				t.Errorf("mean %.2f bids over %d RFQs, target %.0f", mean, rfqs, target)
			}
			t.Logf("size %d: feasible %d, always %d, p %.5f, mean bids %.2f", size, sel.Feasible, len(sel.Always), sel.Probability, mean)
		})
	}
}

func TestSelectBiddersPrefixNeedsGPUs(t *testing.T) {
	// One free GPU each, the job needs 8: the prefix takes 16 providers
	// (twice the GPUs) although half the wanted bids would be 4.
	var view []*Digest
	for i := range 100 {
		view = append(view, selDigest(fmt.Sprintf("p%03d", i), 1, 1_000_000+uint64(i)))
	}
	in := BidSelectInput{RFQ: selRFQ(8, 8), RFQID: "r", Shard: GPUShard("a10"), Digests: view}
	sel := SelectBidders(in)
	if len(sel.Always) != 16 || sel.Always[0] != "p000" || sel.Always[15] != "p015" || sel.Probability != 0 {
		t.Errorf("always %v, p %v", sel.Always, sel.Probability)
	}
	// A 64-GPU job from 1-GPU hosts with 16 wanted: twice the wanted bids
	// hold too few GPUs, so the prefix grows to the job's 64 GPUs once.
	in.RFQ = selRFQ(64, 16)
	if sel := SelectBidders(in); len(sel.Always) != 64 {
		t.Errorf("always %d providers, want 64", len(sel.Always))
	}
}

func TestSelectBiddersShardAndFit(t *testing.T) {
	a10 := selDigest("a", 4, 1_000_000)
	dual := selDigest("dual", 0, 900_000)
	dual.Models = append(dual.Models, DigestModel{Model: "t4-16gb", VRAMMiB: 15360, ComputeCap: "7.5", Total: 2, Free: 2})
	dear := selDigest("dear", 4, 3_000_001)
	cpu := selDigest("cpu", 0, 500_000)
	cpu.Runtimes = []string{RuntimeWasm}
	cpu.Models = nil
	view := []*Digest{a10, dual, dear, cpu}
	r := selRFQ(1, 16)
	r.Resources.Models = nil // any GPU
	in := BidSelectInput{RFQ: r, RFQID: "r", Shard: GPUShard("a10"), Digests: view}
	if sel := SelectBidders(in); !slices.Equal(sel.Always, []string{"a"}) || sel.Feasible != 1 {
		t.Errorf("a10 shard: %+v (dual has no free a10, dear is above max, cpu has no GPU)", sel)
	}
	in.Shard = GPUShard("t4")
	if sel := SelectBidders(in); !slices.Equal(sel.Always, []string{"dual"}) {
		t.Errorf("t4 shard: %+v", sel)
	}
	in.Shard = ShardCPU
	r.Resources = Resources{}
	r.Runtime = RuntimeWasm
	if sel := SelectBidders(in); !slices.Equal(sel.Always, []string{"cpu"}) {
		t.Errorf("cpu shard: %+v", sel)
	}
	// A known reliability below the RFQ's minimum excludes; a low one
	// makes the offer dearer.
	in = BidSelectInput{RFQ: selRFQ(1, 1), RFQID: "r", Shard: GPUShard("a10"),
		Digests: []*Digest{selDigest("x", 1, 1_000_000), selDigest("y", 1, 1_100_000)}, Reliability: map[string]uint32{"x": 500}}
	if sel := SelectBidders(in); !slices.Equal(sel.Always, []string{"y", "x"}) { // x at 2.0 USD effective
		t.Errorf("reliability: %+v", sel)
	}
	in.RFQ.MinReliabilityPermille = 600
	if sel := SelectBidders(in); sel.Feasible != 1 {
		t.Errorf("min reliability: %+v", sel)
	}
	// A firmly held GPU is free again within seconds: a digest sent
	// while it was held still puts its provider in the prefix, with the
	// held GPUs counted; leased ones are not.
	held := selDigest("held", 0, 1_000_000)
	held.Models[0].Held = 2
	in = BidSelectInput{RFQ: selRFQ(2, 4), RFQID: "r", Shard: GPUShard("a10"), Digests: []*Digest{held, selDigest("z", 1, 1_500_000)}}
	if sel := SelectBidders(in); len(sel.Always) == 0 || sel.Always[0] != "held" {
		t.Errorf("held GPUs: %+v, want the held provider first", sel)
	}
	if _, gpus, ok := DigestFitsOn(in.RFQ, held, in.Shard); !ok || gpus != 2 {
		t.Errorf("held GPUs fit %v with %d GPUs, want 2", ok, gpus)
	}
	if _, _, ok := DigestFitsOn(in.RFQ, selDigest("leased", 0, 1_000_000), in.Shard); ok {
		t.Error("a provider with every GPU leased fits")
	}
}

// Properties on random shards: deterministic, independent of the view's
// order, renter and provider agree, the cheapest feasible always bids, the
// prefix is cheaper than the rest, and the expectation is the target.
func TestSelectBiddersProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(0, 300).Draw(t, "size")
		want := rapid.IntRange(0, MaxWantBids).Draw(t, "want")
		need := rapid.IntRange(1, 8).Draw(t, "need")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7))
		view := selShard(rng, size)
		in := BidSelectInput{RFQ: selRFQ(need, want), RFQID: rapid.StringN(1, 20, -1).Draw(t, "rfq"),
			Shard: GPUShard("a10"), Digests: view}
		sel := SelectBidders(in)
		shuffled := slices.Clone(view)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		in2 := in
		in2.Digests = shuffled
		if again := SelectBidders(in2); !slices.Equal(again.Always, sel.Always) || !slices.Equal(again.Sampled, sel.Sampled) {
			t.Fatalf("order changed the selection")
		}
		eff := map[string]uint64{}
		cheapest := ""
		for _, d := range view {
			if p, _, ok := DigestFitsOn(in.RFQ, d, in.Shard); ok {
				eff[d.Peer] = p
				if cheapest == "" || p < eff[cheapest] || p == eff[cheapest] && bidCoin(coinKey(in.RFQID), d.Peer) < bidCoin(coinKey(in.RFQID), cheapest) {
					cheapest = d.Peer
				}
			}
			bid, _ := ShouldBid(in, d.Peer)
			if bid != sel.Includes(d.Peer) {
				t.Fatalf("%s: provider says %v, renter expects %v", d.Peer, bid, sel.Includes(d.Peer))
			}
		}
		if sel.Feasible != len(eff) {
			t.Fatalf("feasible %d, want %d", sel.Feasible, len(eff))
		}
		if cheapest != "" && (len(sel.Always) == 0 || sel.Always[0] != cheapest) {
			t.Fatalf("cheapest %s not first in %v", cheapest, sel.Always)
		}
		if n := len(sel.Always); n > 0 {
			top := eff[sel.Always[n-1]]
			for _, p := range sel.Sampled {
				if eff[p] < top {
					t.Fatalf("sampled %s cheaper than the prefix", p)
				}
			}
		}
		wantN := in.RFQ.WantedBids()
		if e := float64(max(min(wantN, sel.Feasible), len(sel.Always))); sel.Expected != e {
			t.Fatalf("expected %.3f, want %.3f", sel.Expected, e)
		}
		if len(sel.Always) > max(2*wantN, need) && sel.Probability != 0 {
			t.Fatalf("prefix %d over the bound yet p = %v", len(sel.Always), sel.Probability)
		}
	})
}

func BenchmarkSelectBidders10k(b *testing.B) {
	view := selShard(rand.New(rand.NewPCG(1, 2)), 10_000)
	in := BidSelectInput{RFQ: selRFQ(2, 16), RFQID: "r", Shard: GPUShard("a10"), Digests: view}
	for b.Loop() {
		ShouldBid(in, "p000042")
	}
}

// TestEveryoneBids: at want_bids EveryoneBids every feasible provider bids,
// cheapest first, however many cheaper ones fill the view (the renter's
// fallback when the providers it expected stayed silent).
func TestEveryoneBids(t *testing.T) {
	view := []*Digest{selDigest("honest", 2, 1_500_000)}
	for i := range 200 {
		view = append(view, selDigest(fmt.Sprintf("sybil%03d", i), 8, 1_000))
	}
	in := BidSelectInput{RFQ: selRFQ(1, DefaultWantBids), RFQID: "r", Shard: GPUShard("a10"), Digests: view}
	if ok, _ := ShouldBid(in, "honest"); ok {
		t.Fatal("with the default want_bids the dear provider should be outside the cheap prefix")
	}
	in.RFQ.WantBids = EveryoneBids
	sel := SelectBidders(in)
	if len(sel.Always) != len(view) || sel.Always[len(sel.Always)-1] != "honest" || sel.Expected != float64(len(view)) {
		t.Fatalf("everyone bids: %d always, last %q, expected %v", len(sel.Always), sel.Always[len(sel.Always)-1], sel.Expected)
	}
	if ok, _ := ShouldBid(in, "honest"); !ok {
		t.Fatal("the dear provider does not bid when everyone is asked")
	}
}

func TestWantBidsScaleWithGPUs(t *testing.T) {
	for _, tc := range []struct {
		base   int
		gpus   uint32
		want   int
		copies int
		shards int
		rfq    uint32
	}{
		{16, 0, 16, 1, 1, 16}, // CPU-only
		{16, 1, 16, 1, 3, 6},
		{16, 4, 22, 1, 1, 22},
		{16, 16, 46, 1, 2, 23},
		{16, 25, 64, 1, 1, 64},
		{16, 1 << 31, 64, 1, 1, 64},
		{1, 1, 1, 1, 1, 1},
		{1, 2, 3, 1, 4, 1},
		{16, 1, 16, 3, 1, 48}, // three replicas
		{16, 8, 30, 4, 1, 64},
		{16, 1, 16, 1, 0, 16},
	} {
		if got := WantBidsFor(tc.base, tc.gpus); got != tc.want {
			t.Errorf("WantBidsFor(%d, %d) = %d, want %d", tc.base, tc.gpus, got, tc.want)
		}
		if got := RFQWantBids(tc.base, tc.gpus, tc.copies, tc.shards); got != tc.rfq {
			t.Errorf("RFQWantBids(%d, %d, %d, %d) = %d, want %d", tc.base, tc.gpus, tc.copies, tc.shards, got, tc.rfq)
		}
	}
}

// TestManyGPUJobWantsMoreBids: a 32-GPU job on one-GPU hosts, three of
// the cheapest of which refuse it for what their digests do not show (an
// image they do not allow). At the base want_bids the always-bid prefix
// holds exactly 32 hosts and the plan falls 3 GPUs short; scaled with the
// job's GPUs it holds spares and fills.
func TestManyGPUJobWantsMoreBids(t *testing.T) {
	hosts := calendarShard(t, 10, 100, 1, 1_000_000, 0)
	for _, h := range hosts[:3] {
		h.cap.Policy.AllowedImages = []string{"ghcr.io/other/*"}
	}
	for _, tc := range []struct {
		name   string
		want   uint32
		filled bool
	}{{"base", DefaultWantBids, false}, {"scaled", RFQWantBids(DefaultWantBids, 32, 1, 1), true}} {
		r := calendarRFQ(32, time.Hour, tc.want)
		sel := SelectBidders(BidSelectInput{RFQ: r, RFQID: "rfq", Shard: GPUShard("a10"), Digests: digestsOf(hosts), Now: fixedNow})
		bids := bidsFrom(hosts, r, "rfq", sel.Includes)
		p := Match(MatchInput{RFQ: r, RFQID: "rfq", Bids: bids, Prior: 0.8, Now: fixedNow.Add(time.Second), Weights: PriceOnlyWeights()})
		if filled := p.Unfilled == ""; filled != tc.filled || len(bids) > 2*r.WantedBids() {
			t.Errorf("%s (want_bids %d): %d bids, filled %v (%s); want filled %v", tc.name, r.WantedBids(), len(bids), filled, p.Unfilled, tc.filled)
		}
	}
}
