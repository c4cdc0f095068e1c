package auction

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const testRFQID = "bafyrfq"

// matchRFQ is a silver request for 4 H100-class GPUs at up to 3 USD/h.
func matchRFQ() *RFQ {
	return &RFQ{
		V: MessagesVersion, Renter: "renter", JobCID: "bafyjob",
		IssuedAtMs: fixedNow.UnixMilli(), ExpiresAtMs: fixedNow.Add(time.Minute).UnixMilli(),
		Resources:     Resources{GPUs: 4, Models: []string{"h100"}, MinVRAMMiB: 80_000},
		Runtime:       RuntimeDocker,
		Tier:          TierSilver,
		MaxPriceMicro: 3_000_000,
		Pricing:       PayBid,
	}
}

// matchBid is a feasible bid from prov with n GPUs at price.
func matchBid(prov string, price uint64, n int) *Bid {
	b := &Bid{
		V: MessagesVersion, Provider: prov, RFQ: testRFQID, JobCID: "bafyjob",
		PriceMicro: price, Model: "h100-80gb", VRAMMiB: 81559, Region: "de",
		EarliestStartMs: fixedNow.UnixMilli(), IssuedAtMs: fixedNow.UnixMilli(),
		ValidUntilMs: fixedNow.Add(time.Minute).UnixMilli(),
	}
	for i := range n {
		b.GPUs = append(b.GPUs, fmt.Sprintf("GPU-%s-%d", prov, i))
	}
	return b
}

// matchInput uses legacyWeights: most tables here pin the rules of that
// selection; matcher_pools_test.go covers DefaultWeights.
func matchInput(rfq *RFQ, bids ...*Bid) MatchInput {
	return MatchInput{RFQ: rfq, RFQID: testRFQID, Bids: bids, Prior: 1, Now: fixedNow, Weights: legacyWeights()}
}

// legacyWeights are the defaults before pools were ranked by cost:
// price/reliability, a single host preferred to any pool.
func legacyWeights() Weights {
	return Weights{ReliabilityExp: 1, RTTPerMs: 200, LocalityBonus: 0.05, UnknownRTT: 100 * time.Millisecond}
}

func TestModelMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, slug string
		want          bool
	}{
		{"h100", "h100", true},
		{"h100", "h100-80gb", true},
		{"h100", "h100-nvl-94gb", true},
		{"h100", "h1000", false},
		{"h100-80gb", "h100-80gb", true},
		{"h100-80gb", "h100", false},
		{"a100", "h100-80gb", false},
	} {
		if got := ModelMatches(tc.pattern, tc.slug); got != tc.want {
			t.Errorf("ModelMatches(%q, %q) = %v, want %v", tc.pattern, tc.slug, got, tc.want)
		}
	}
	if !ModelAccepted(nil, "anything") {
		t.Error("an empty model list must accept any model")
	}
}

// TestMatchFilters puts one good 4-GPU bid ("good") next to the bid under
// test ("x", also 4 GPUs and cheaper), so a rejection leaves a plan, and
// checks the code x gets.
func TestMatchFilters(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(in *MatchInput, x *Bid)
		want string // "" = x is feasible and wins
	}{
		{"feasible", func(*MatchInput, *Bid) {}, ""},
		{"wrong rfq id", func(_ *MatchInput, x *Bid) { x.RFQ = "other" }, RejectWrongRFQ},
		{"wrong job cid", func(_ *MatchInput, x *Bid) { x.JobCID = "other" }, RejectWrongRFQ},
		{"declined provider", func(in *MatchInput, x *Bid) { in.Declined = map[string]bool{"x": true} }, RejectDeclined},
		{"zero gpus", func(_ *MatchInput, x *Bid) { x.GPUs = nil }, RejectNoGPUs},
		{"repeated gpu uuid", func(_ *MatchInput, x *Bid) { x.GPUs[1] = x.GPUs[0] }, RejectMalformed},
		{"empty gpu uuid", func(_ *MatchInput, x *Bid) { x.GPUs[2] = "" }, RejectMalformed},
		{"more gpus than a host holds", func(_ *MatchInput, x *Bid) {
			*x = *matchBid("x", x.PriceMicro, MaxGPUsPerHost+1)
		}, RejectMalformed},
		{"expired at now", func(_ *MatchInput, x *Bid) { x.ValidUntilMs = fixedNow.UnixMilli() }, RejectExpired},
		{"valid one ms longer", func(_ *MatchInput, x *Bid) { x.ValidUntilMs = fixedNow.UnixMilli() + 1 }, ""},
		{"price above max", func(in *MatchInput, x *Bid) { x.PriceMicro = in.RFQ.MaxPriceMicro + 1 }, RejectPrice},
		{"price equal to max", func(in *MatchInput, x *Bid) { in.RFQ.MaxPriceMicro = x.PriceMicro }, ""},
		{"reliability below minimum", func(in *MatchInput, x *Bid) {
			in.RFQ.MinReliabilityPermille = 900
			in.Reputation = map[string]float64{"x": 0.899, "good": 1}
		}, RejectReliability},
		{"unknown provider below minimum by prior", func(in *MatchInput, x *Bid) {
			in.RFQ.MinReliabilityPermille = 900
			in.Prior = 0.5
			in.Reputation = map[string]float64{"good": 1}
		}, RejectReliability},
		{"rtt above max", func(in *MatchInput, x *Bid) {
			in.RFQ.MaxRTTMs = 50
			in.RTT = map[string]time.Duration{"x": 51 * time.Millisecond}
		}, RejectRTT},
		{"unknown rtt passes", func(in *MatchInput, x *Bid) {
			in.RFQ.MaxRTTMs = 50
			in.RTT = map[string]time.Duration{"good": 10 * time.Millisecond}
		}, ""},
		{"region not allowed", func(in *MatchInput, x *Bid) { in.RFQ.Regions = []string{"de", "fr"}; x.Region = "us" }, RejectRegion},
		{"region allowed", func(in *MatchInput, x *Bid) { in.RFQ.Regions = []string{"fr", "de"} }, ""},
		{"model not accepted", func(_ *MatchInput, x *Bid) { x.Model = "a100-80gb" }, RejectModel},
		{"model family prefix is not a family", func(_ *MatchInput, x *Bid) { x.Model = "h1000" }, RejectModel},
		{"any model when none requested", func(in *MatchInput, x *Bid) { in.RFQ.Resources.Models = nil; x.Model = "l40s" }, ""},
		{"vram below minimum", func(_ *MatchInput, x *Bid) { x.VRAMMiB = 79_999 }, RejectVRAM},
		{"bronze notice too short", func(in *MatchInput, x *Bid) {
			in.RFQ.Tier = TierBronze
			in.RFQ.MinNoticeSec = 300
			in.Bids[0].NoticeSec = 300
			x.NoticeSec = 299
		}, RejectNotice},
		{"notice ignored for silver", func(in *MatchInput, x *Bid) { in.RFQ.MinNoticeSec = 300 }, ""},
		{"starts after start-by", func(in *MatchInput, x *Bid) {
			in.RFQ.StartByMs = fixedNow.Add(time.Minute).UnixMilli()
			x.EarliestStartMs = in.RFQ.StartByMs + 1
		}, RejectStart},
		{"starts exactly at start-by", func(in *MatchInput, x *Bid) {
			in.RFQ.StartByMs = fixedNow.Add(time.Minute).UnixMilli()
			x.EarliestStartMs = in.RFQ.StartByMs
		}, ""},
		{"superseded by a later bid", func(in *MatchInput, x *Bid) {
			later := matchBid("x", 2_000_000, 4)
			later.IssuedAtMs = x.IssuedAtMs + 1
			in.Bids = append(in.Bids, later)
		}, RejectSuperseded},
		{"no capacity record backs it", func(in *MatchInput, x *Bid) {
			in.Unbacked = map[string]string{"x": "no capacity record of the provider was found"}
		}, RejectUnbacked},
		{"later bid supersedes even if dearer", func(in *MatchInput, x *Bid) {
			earlier := matchBid("x", 1, 4)
			earlier.IssuedAtMs = x.IssuedAtMs - 1
			in.Bids = append(in.Bids, earlier)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := matchBid("good", 2_500_000, 4)
			x := matchBid("x", 2_000_000, 4)
			in := matchInput(matchRFQ(), good, x)
			tc.edit(&in, x)
			p := Match(in)
			if p.Unfilled != "" {
				t.Fatalf("unfilled: %s", p.Unfilled)
			}
			if len(p.Allocations) != 1 {
				t.Fatalf("allocations = %+v, want one", p.Allocations)
			}
			if tc.want == "" {
				if p.Allocations[0].BidIndex != 1 {
					t.Fatalf("winner is bid %d, want x (1); losers %+v", p.Allocations[0].BidIndex, p.Losers)
				}
				return
			}
			var got *Rejection
			for i := range p.Losers {
				if p.Losers[i].BidIndex == 1 {
					got = &p.Losers[i]
				}
			}
			if got == nil || got.Code != tc.want {
				t.Fatalf("x lost with %+v, want code %q", got, tc.want)
			}
			if got.Reason == "" || got.Provider != "x" {
				t.Errorf("rejection %+v lacks reason or provider", got)
			}
		})
	}
}

func TestMatchNilBidIsMalformed(t *testing.T) {
	p := Match(matchInput(matchRFQ(), nil, matchBid("good", 1, 4)))
	if len(p.Losers) != 1 || p.Losers[0].Code != RejectMalformed || p.Losers[0].BidIndex != 0 {
		t.Fatalf("losers = %+v", p.Losers)
	}
}

func TestMatchNilRFQRejectsEverything(t *testing.T) {
	in := matchInput(nil, matchBid("a", 1, 4))
	p := Match(in)
	if p.Unfilled == "" || len(p.Losers) != 1 || p.Losers[0].Code != RejectNoRFQ {
		t.Fatalf("plan = %+v", p)
	}
}

func TestMatchSingleHostBeatsCheaperPool(t *testing.T) {
	// Two 2-GPU hosts are cheaper, but one 4-GPU host can hold the job.
	p := Match(matchInput(matchRFQ(), matchBid("a", 1_000_000, 2), matchBid("b", 1_000_000, 2), matchBid("c", 2_000_000, 4)))
	if len(p.Allocations) != 1 || p.Allocations[0].Provider != "c" || len(p.Allocations[0].GPUs) != 4 {
		t.Fatalf("allocations = %+v", p.Allocations)
	}
	if !slices.Equal(p.Backups, []int{0, 1}) {
		t.Errorf("backups = %v, want [0 1]", p.Backups)
	}
}

func TestMatchSingleHostTakesPrefixOfBiggerBid(t *testing.T) {
	p := Match(matchInput(matchRFQ(), matchBid("a", 1_000_000, 8)))
	want := []string{"GPU-a-0", "GPU-a-1", "GPU-a-2", "GPU-a-3"}
	if len(p.Allocations) != 1 || !slices.Equal(p.Allocations[0].GPUs, want) {
		t.Fatalf("allocations = %+v", p.Allocations)
	}
}

func TestMatchPoolTakesBestFirstAndPrefixOfLast(t *testing.T) {
	rfq := matchRFQ()
	rfq.Resources.GPUs = 5
	p := Match(matchInput(rfq, matchBid("dear", 2_900_000, 3), matchBid("cheap", 1_000_000, 2), matchBid("mid", 2_000_000, 3)))
	got := allocSummary(p)
	want := "cheap:2 mid:3"
	if got != want {
		t.Fatalf("allocations %s, want %s", got, want)
	}
	rfq.Resources.GPUs = 6
	p = Match(matchInput(rfq, matchBid("dear", 2_900_000, 3), matchBid("cheap", 1_000_000, 2), matchBid("mid", 2_000_000, 3)))
	if got, want := allocSummary(p), "cheap:2 mid:3 dear:1"; got != want {
		t.Fatalf("allocations %s, want %s", got, want)
	}
	if last := p.Allocations[2].GPUs; !slices.Equal(last, []string{"GPU-dear-0"}) {
		t.Errorf("last host gives %v, want the prefix [GPU-dear-0]", last)
	}
}

func TestMatchPoolPrefersFewerHostsAtEqualCost(t *testing.T) {
	rfq := matchRFQ()
	rfq.Resources.GPUs = 6
	p := Match(matchInput(rfq,
		matchBid("a", 2_000_000, 2), matchBid("b", 2_000_000, 2), matchBid("c", 2_000_000, 2), matchBid("d", 2_000_000, 5)))
	if got, want := allocSummary(p), "d:5 a:1"; got != want {
		t.Fatalf("allocations %s, want %s (two hosts, not three)", got, want)
	}
}

func TestMatchUnfilledWhenFeasibleBidsFallShort(t *testing.T) {
	rfq := matchRFQ()
	rfq.Resources.GPUs = 8
	p := Match(matchInput(rfq, matchBid("a", 1, 3), matchBid("b", 2, 3), matchBid("c", 9_000_000, 4)))
	if !strings.Contains(p.Unfilled, "6 of 8") {
		t.Fatalf("unfilled = %q, want it to say 6 of 8", p.Unfilled)
	}
	if len(p.Allocations) != 0 || !slices.Equal(p.Backups, []int{0, 1}) {
		t.Fatalf("plan = %+v", p)
	}
	codes := map[int]string{}
	for _, l := range p.Losers {
		codes[l.BidIndex] = l.Code
	}
	if codes[0] != RejectUnfilled || codes[1] != RejectUnfilled || codes[2] != RejectPrice {
		t.Errorf("codes = %v", codes)
	}
}

func TestMatchScoring(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(in *MatchInput)
		winner string
	}{
		{"cheaper wins", func(*MatchInput) {}, "a"},
		{"unreliable cheap loses", func(in *MatchInput) {
			in.Reputation = map[string]float64{"a": 0.5, "b": 0.9}
		}, "b"},
		{"reliability ignored at exponent zero", func(in *MatchInput) {
			in.Reputation = map[string]float64{"a": 0.5, "b": 0.9}
			in.Weights.ReliabilityExp = 0
		}, "a"},
		{"far provider pays rtt", func(in *MatchInput) {
			// 200 uUSD/ms: 1500 ms adds 300,000, more than the 100,000 gap.
			in.RTT = map[string]time.Duration{"a": 1500 * time.Millisecond, "b": 0}
		}, "b"},
		{"unknown rtt scored at rfq max", func(in *MatchInput) {
			in.RFQ.MaxRTTMs = 1000
			in.RTT = map[string]time.Duration{"b": 0}
		}, "b"},
		{"unknown rtt scored at default without rfq max", func(in *MatchInput) {
			in.RTT = map[string]time.Duration{"b": 0}
		}, "a"},
		{"locality discount wins", func(in *MatchInput) {
			in.RFQ.Datasets = []string{"d1", "d2"}
			in.Bids[1].Datasets = []string{"d1", "d2", "d1", "unrequested"}
		}, "b"},
		{"near region wins a 5% dearer bid", func(in *MatchInput) {
			in.Weights.NearBonus = 0.1
			in.RFQ.Near = []string{"nl"}
			in.Bids[1].Region = "nl"
		}, "b"},
		{"near bonus off ignores near", func(in *MatchInput) {
			in.RFQ.Near = []string{"nl"}
			in.Bids[1].Region = "nl"
		}, "a"},
		{"near does not beat a much cheaper bid", func(in *MatchInput) {
			// 10% off 2.3M = 2.07M, dearer than a's 2M.
			in.Weights.NearBonus = 0.1
			in.RFQ.Near = []string{"nl"}
			in.Bids[1].Region = "nl"
			in.Bids[1].PriceMicro = 2_300_000
		}, "a"},
		{"measured rtt over max loses", func(in *MatchInput) {
			in.RFQ.MaxRTTMs = 50
			in.RTT = map[string]time.Duration{"a": 80 * time.Millisecond, "b": 10 * time.Millisecond}
		}, "b"},
		{"locality counts requested datasets once", func(in *MatchInput) {
			// One dataset is 5% off 2.2M = 2.09M, still dearer than a's 2M.
			in.RFQ.Datasets = []string{"d1"}
			in.Bids[1].PriceMicro = 2_200_000
			in.Bids[1].Datasets = []string{"d1", "d1", "d1", "d1"}
		}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := matchInput(matchRFQ(), matchBid("a", 2_000_000, 4), matchBid("b", 2_100_000, 4))
			tc.edit(&in)
			p := Match(in)
			if len(p.Allocations) != 1 || p.Allocations[0].Provider != tc.winner {
				t.Fatalf("allocations %+v, want %s", p.Allocations, tc.winner)
			}
		})
	}
}

func TestMatchEffectivePrice(t *testing.T) {
	rfq := matchRFQ()
	rfq.Datasets = []string{"d"}
	b := matchBid("a", 1_000_000, 4)
	b.Datasets = []string{"d"}
	in := matchInput(rfq, b)
	in.Reputation = map[string]float64{"a": 0.5}
	in.RTT = map[string]time.Duration{"a": 10 * time.Millisecond}
	p := Match(in)
	// (1e6/0.5 + 200*10) * (1-0.05)
	want := (2_000_000 + 2_000) * 0.95
	if got := p.Allocations[0].EffectivePrice; math.Abs(got-want) > 1e-6 {
		t.Fatalf("effective price %v, want %v", got, want)
	}
}

func TestMatchZeroWeightsArePurePrice(t *testing.T) {
	in := matchInput(matchRFQ(), matchBid("a", 2_000_000, 4), matchBid("b", 2_100_000, 4))
	in.Reputation = map[string]float64{"a": 0.5, "b": 0.9}
	in.RTT = map[string]time.Duration{"a": time.Second}
	in.Weights = Weights{}
	if p := Match(in); p.Allocations[0].Provider != "a" || p.Allocations[0].EffectivePrice != 2_000_000 {
		t.Fatalf("zero weights did not rank by price alone: %+v", p.Allocations)
	}
}

func TestMatchPricing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rule     PricingRule
		need     uint32
		bids     []*Bid
		rep      map[string]float64
		want     []uint64 // per allocation, in rank order
		clearing uint64
	}{
		{"first price pays each its bid", PayBid, 4,
			[]*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_500_000, 2), matchBid("c", 2_000_000, 2)},
			nil, []uint64{1_000_000, 1_500_000}, 0},
		{"unknown rule pays bid", "", 4,
			[]*Bid{matchBid("a", 1_000_000, 4), matchBid("b", 1_500_000, 4)},
			nil, []uint64{1_000_000}, 0},
		{"second price pays best loser", PaySecond, 4,
			[]*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_500_000, 2), matchBid("c", 2_000_000, 2)},
			nil, []uint64{2_000_000, 2_000_000}, 2_000_000},
		{"second price without loser pays max", PaySecond, 4,
			[]*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_500_000, 2)},
			nil, []uint64{3_000_000, 3_000_000}, 3_000_000},
		{"second price never below a winner's bid", PaySecond, 4,
			// a wins on reliability with a higher raw price than loser b.
			[]*Bid{matchBid("a", 2_000_000, 4), matchBid("b", 1_500_000, 4)},
			map[string]float64{"a": 1, "b": 0.5}, []uint64{2_000_000}, 2_000_000},
		{"second price loser ahead of single host", PaySecond, 4,
			// b ranks first but cannot hold 4; a wins alone, b is the best loser.
			[]*Bid{matchBid("a", 2_000_000, 4), matchBid("b", 1_000_000, 2), matchBid("c", 2_500_000, 4)},
			nil, []uint64{2_000_000}, 2_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rfq := matchRFQ()
			rfq.Pricing = tc.rule
			rfq.Resources.GPUs = tc.need
			in := matchInput(rfq, tc.bids...)
			in.Reputation = tc.rep
			p := Match(in)
			var got []uint64
			for _, a := range p.Allocations {
				got = append(got, a.PriceMicro)
			}
			if !slices.Equal(got, tc.want) || p.ClearingPriceMicro != tc.clearing {
				t.Fatalf("prices %v clearing %d, want %v clearing %d", got, p.ClearingPriceMicro, tc.want, tc.clearing)
			}
		})
	}
}

// TestMatchRerunAfterDecline is how the node passes an award on: add the
// decliner to Declined and match again. Earlier winners keep their GPUs,
// the last host of the pool may give more, and PlanDelta is what to award.
func TestMatchRerunAfterDecline(t *testing.T) {
	rfq := matchRFQ()
	rfq.Resources.GPUs = 6
	bids := []*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_100_000, 2), matchBid("c", 1_200_000, 4), matchBid("d", 1_300_000, 4)}
	in := matchInput(rfq, bids...)
	first := Match(in)
	if got, want := allocSummary(first), "a:2 b:2 c:2"; got != want {
		t.Fatalf("first plan %s, want %s", got, want)
	}
	in.Declined = map[string]bool{"b": true}
	second := Match(in)
	if got, want := allocSummary(second), "a:2 c:4"; got != want {
		t.Fatalf("after b declined: %s, want %s", got, want)
	}
	delta := PlanDelta(first, second)
	if len(delta) != 1 || delta[0].Provider != "c" || !slices.Equal(delta[0].GPUs, []string{"GPU-c-2", "GPU-c-3"}) {
		t.Fatalf("delta = %+v, want c's two added GPUs", delta)
	}
	in.Declined["c"] = true
	third := Match(in)
	if got, want := allocSummary(third), "a:2 d:4"; got != want {
		t.Fatalf("after c declined too: %s, want %s", got, want)
	}
	if d := PlanDelta(second, third); len(d) != 1 || d[0].Provider != "d" || len(d[0].GPUs) != 4 {
		t.Fatalf("delta = %+v", d)
	}
	// Removing the declined bids from the slice instead gives the same
	// winners (indices shift, providers and GPUs do not).
	removed := Match(matchInput(rfq, bids[0], bids[3]))
	if allocSummary(removed) != allocSummary(third) || !reflect.DeepEqual(removed.Allocations[1].GPUs, third.Allocations[1].GPUs) {
		t.Fatalf("removing bids gave %s, declining gave %s", allocSummary(removed), allocSummary(third))
	}
}

func TestMatchIsIndependentOfBidOrder(t *testing.T) {
	rfq := matchRFQ()
	rfq.Resources.GPUs = 5
	rfq.Pricing = PaySecond
	bids := []*Bid{matchBid("a", 1_000_000, 2), matchBid("b", 1_000_000, 2), matchBid("c", 1_000_000, 2), matchBid("d", 1_000_000, 1)}
	want := allocSummary(Match(matchInput(rfq, bids...)))
	slices.Reverse(bids)
	if got := allocSummary(Match(matchInput(rfq, bids...))); got != want {
		t.Fatalf("reversed bids: %s, want %s", got, want)
	}
}

func allocSummary(p Plan) string {
	var parts []string
	for _, a := range p.Allocations {
		parts = append(parts, fmt.Sprintf("%s:%d", a.Provider, len(a.GPUs)))
	}
	return strings.Join(parts, " ")
}
