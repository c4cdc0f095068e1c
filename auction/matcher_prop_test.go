package auction

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var (
	propModels  = []string{"h100-80gb", "h100-nvl-94gb", "a100-80gb", "a100-40gb", "l40s", "h1000"}
	propFamily  = []string{"h100", "a100", "l40s", "a100-40gb"}
	propRegions = []string{"de", "fr", "us", "jp"}
	propSets    = []string{"d1", "d2", "d3"}
)

// subset draws a random subset of xs, in xs order.
func subset(t *rapid.T, label string, xs []string) []string {
	var out []string
	for _, x := range xs {
		if rapid.Bool().Draw(t, label+"."+x) {
			out = append(out, x)
		}
	}
	return out
}

func drawRFQ(t *rapid.T) *RFQ {
	r := matchRFQ()
	r.Resources.GPUs = uint32(rapid.IntRange(0, 24).Draw(t, "need"))
	r.Resources.Models = subset(t, "models", propFamily)
	r.Resources.MinVRAMMiB = rapid.SampledFrom([]uint64{0, 24_000, 40_000, 80_000}).Draw(t, "minvram")
	r.Tier = rapid.SampledFrom(Tiers).Draw(t, "tier")
	r.MaxPriceMicro = rapid.Uint64Range(0, 5_000_000).Draw(t, "max")
	if rapid.Bool().Draw(t, "hasminrel") {
		r.MinReliabilityPermille = uint32(rapid.IntRange(0, 1000).Draw(t, "minrel"))
	}
	r.Regions = subset(t, "regions", propRegions)
	if rapid.Bool().Draw(t, "hasrtt") {
		r.MaxRTTMs = uint32(rapid.IntRange(1, 300).Draw(t, "maxrtt"))
	}
	if rapid.Bool().Draw(t, "hasstartby") {
		r.StartByMs = fixedNow.UnixMilli() + rapid.Int64Range(0, 600_000).Draw(t, "startby")
	}
	r.MinNoticeSec = uint32(rapid.IntRange(0, 600).Draw(t, "minnotice"))
	r.Pricing = rapid.SampledFrom([]PricingRule{PayBid, PaySecond}).Draw(t, "pricing")
	r.Datasets = subset(t, "datasets", propSets)
	if rapid.Bool().Draw(t, "hasmodel") {
		r.ExpectedDurationSec = rapid.Uint64Range(0, 86_400).Draw(t, "expected")
		r.Model = &ModelRef{ID: testModelID, SizeMiB: rapid.Uint64Range(1, 200_000).Draw(t, "modelsize")}
	}
	return r
}

// drawBid draws a bid for r that breaks each filter rule only now and
// then, so that many bids are feasible and plans often fill.
func drawBid(t *rapid.T, i int, providers int, r *RFQ) *Bid {
	l := func(s string) string { return fmt.Sprintf("bid%d.%s", i, s) }
	// odd reports true with probability 1/n: the bid breaks a rule.
	// rapid favours range ends, so a middle value marks the rare case.
	odd := func(s string, n int) bool { return rapid.IntRange(0, n-1).Draw(t, l(s)) == n/2 }
	if odd("nil", 100) {
		return nil
	}
	// Most bids come from their own provider; some repeat one, to
	// exercise superseding.
	prov := fmt.Sprintf("p%02d", i%providers)
	if odd("sameprov", 8) {
		prov = fmt.Sprintf("p%02d", rapid.IntRange(0, providers-1).Draw(t, l("prov")))
	}
	now := fixedNow.UnixMilli()
	b := matchBid(prov, 0, 0)
	if odd("price.over", 16) {
		b.PriceMicro = rapid.Uint64Range(0, 6_000_000).Draw(t, l("price.any"))
	} else {
		b.PriceMicro = rapid.Uint64Range(0, r.MaxPriceMicro).Draw(t, l("price"))
	}
	if odd("rfq", 30) {
		b.RFQ = "other"
	}
	if odd("job", 30) {
		b.JobCID = "other"
	}
	n := rapid.IntRange(0, 10).Draw(t, l("ngpus"))
	if odd("huge", 50) {
		n = MaxGPUsPerHost + 1
	}
	// UUIDs are unique per provider and bid, except for injected repeats.
	for g := range n {
		b.GPUs = append(b.GPUs, fmt.Sprintf("GPU-%s-%d-%d", prov, i, g))
	}
	if n > 1 && odd("dup", 30) {
		b.GPUs[n-1] = b.GPUs[0]
	}
	b.Model = rapid.SampledFrom(propModels).Draw(t, l("model"))
	for k := 0; k < 3 && !ModelAccepted(r.Resources.Models, b.Model) && !odd(fmt.Sprint("model.other", k), 16); k++ {
		b.Model = rapid.SampledFrom(propModels).Draw(t, l(fmt.Sprint("model.retry", k)))
	}
	b.VRAMMiB = rapid.SampledFrom([]uint64{24_000, 40_000, 46_068, 81_559, 94_000}).Draw(t, l("vram"))
	if !odd("vram.low", 16) {
		b.VRAMMiB = max(b.VRAMMiB, r.Resources.MinVRAMMiB)
	}
	b.Region = rapid.SampledFrom(propRegions).Draw(t, l("region"))
	if len(r.Regions) > 0 && !odd("region.other", 16) {
		b.Region = rapid.SampledFrom(r.Regions).Draw(t, l("region.ok"))
	}
	b.Datasets = subset(t, l("ds"), propSets)
	b.IssuedAtMs = now - rapid.Int64Range(0, 5).Draw(t, l("issued"))
	b.ValidUntilMs = now + 1 + rapid.Int64Range(0, 60_000).Draw(t, l("valid"))
	if odd("expired", 16) {
		b.ValidUntilMs = now - rapid.Int64Range(0, 2).Draw(t, l("expired.by"))
	}
	b.EarliestStartMs = now + rapid.Int64Range(0, 900_000).Draw(t, l("start"))
	if r.StartByMs != 0 && !odd("late", 16) {
		b.EarliestStartMs = min(b.EarliestStartMs, r.StartByMs)
	}
	b.NoticeSec = uint32(rapid.IntRange(0, 900).Draw(t, l("notice")))
	if !odd("notice.short", 16) {
		b.NoticeSec = max(b.NoticeSec, r.MinNoticeSec)
	}
	return b
}

func drawMatchInput(t *rapid.T) MatchInput {
	rfq := drawRFQ(t)
	nbids := rapid.IntRange(0, 200).Draw(t, "nbids")
	providers := max(1, nbids-rapid.IntRange(0, nbids).Draw(t, "fewerproviders"))
	in := MatchInput{RFQ: rfq, RFQID: testRFQID, Now: fixedNow,
		Prior:      rapid.Float64Range(float64(rfq.MinReliabilityPermille)/1000*float64(rapid.IntRange(0, 1).Draw(t, "priorok")), 1).Draw(t, "prior"),
		Reputation: map[string]float64{}, RTT: map[string]time.Duration{}, Declined: map[string]bool{}}
	for i := range nbids {
		in.Bids = append(in.Bids, drawBid(t, i, providers, rfq))
	}
	for p := range providers {
		id := fmt.Sprintf("p%02d", p)
		if rapid.Bool().Draw(t, id+".rep") {
			lo := 0.0
			if rapid.IntRange(0, 7).Draw(t, id+".lowrel") != 4 {
				lo = float64(rfq.MinReliabilityPermille) / 1000
			}
			in.Reputation[id] = rapid.Float64Range(lo, 1).Draw(t, id+".rel")
		}
		if rapid.Bool().Draw(t, id+".hasrtt") {
			hi := 400
			if rfq.MaxRTTMs > 0 && rapid.IntRange(0, 7).Draw(t, id+".far") != 4 {
				hi = int(rfq.MaxRTTMs)
			}
			in.RTT[id] = time.Duration(rapid.IntRange(0, hi).Draw(t, id+".rtt")) * time.Millisecond
		}
		if rapid.IntRange(0, 29).Draw(t, id+".declined") == 15 {
			in.Declined[id] = true
		}
		if rfq.Model != nil && rapid.Bool().Draw(t, id+".hasrecord") {
			if in.ModelHosts == nil {
				in.ModelHosts = map[string]ModelHost{}
			}
			in.ModelHosts[id] = ModelHost{Warm: rapid.Bool().Draw(t, id+".warm"),
				BandwidthMbps: uint32(rapid.IntRange(0, 200_000).Draw(t, id+".mbps"))}
		}
	}
	switch rapid.IntRange(0, 2).Draw(t, "weights") {
	case 0:
		in.Weights = DefaultWeights()
	case 1:
		in.Weights = legacyWeights()
	default:
		in.Weights = Weights{
			ReliabilityExp:  rapid.Float64Range(0, 3).Draw(t, "w.rel"),
			RTTPerMs:        rapid.Float64Range(0, 5000).Draw(t, "w.rtt"),
			LocalityBonus:   rapid.Float64Range(0, 0.4).Draw(t, "w.loc"),
			UnknownRTT:      time.Duration(rapid.IntRange(0, 300).Draw(t, "w.unknown")) * time.Millisecond,
			ColdStartCharge: rapid.Float64Range(0, 3).Draw(t, "w.cold"),
		}
	}
	return in
}

// feasibleByHand re-states every filter rule without the matcher's code.
// ok is false for a bid whose provider has another current bid with the
// same IssuedAtMs: which one wins that tie is the matcher's choice.
func feasibleByHand(in MatchInput, i int) (feasible, ok bool) {
	b := in.Bids[i]
	if b == nil || b.RFQ != in.RFQID || b.JobCID != in.RFQ.JobCID || in.Declined[b.Provider] {
		return false, true
	}
	for j, o := range in.Bids {
		if j == i || o == nil || o.Provider != b.Provider || o.RFQ != in.RFQID || o.JobCID != in.RFQ.JobCID {
			continue
		}
		if o.IssuedAtMs > b.IssuedAtMs {
			return false, true
		}
		if o.IssuedAtMs == b.IssuedAtMs {
			return false, false
		}
	}
	r := in.RFQ
	seen := map[string]bool{}
	for _, g := range b.GPUs {
		if g == "" || seen[g] {
			return false, true
		}
		seen[g] = true
	}
	rel, known := in.Reputation[b.Provider]
	if !known {
		rel = in.Prior
	}
	rtt, measured := in.RTT[b.Provider]
	modelOK := len(r.Resources.Models) == 0
	for _, m := range r.Resources.Models {
		modelOK = modelOK || b.Model == m || strings.HasPrefix(b.Model, m+"-")
	}
	// A CPU-only request takes only bids without GPUs, any other only
	// bids with some.
	feasible = (len(b.GPUs) > 0) == (r.Resources.GPUs > 0) && len(b.GPUs) <= MaxGPUsPerHost &&
		in.Now.UnixMilli() < b.ValidUntilMs &&
		b.PriceMicro <= r.MaxPriceMicro &&
		rel*1000 >= float64(r.MinReliabilityPermille)-1e-9 &&
		(!probationApplies(r, in.Weights) || rel >= in.Prior-in.Weights.ExcludeBelowPrior) &&
		(!measured || r.MaxRTTMs == 0 || rtt <= time.Duration(r.MaxRTTMs)*time.Millisecond) &&
		(len(r.Regions) == 0 || slices.Contains(r.Regions, b.Region)) &&
		modelOK &&
		b.VRAMMiB >= r.Resources.MinVRAMMiB &&
		(r.Tier != TierBronze || b.NoticeSec >= r.MinNoticeSec) &&
		(r.StartByMs == 0 || b.EarliestStartMs <= r.StartByMs)
	return feasible, true
}

func TestMatchProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawMatchInput(t)
		p := Match(in)
		checkPlan(t, in, p)

		// The same bids in another order give the same plan.
		perm := rapid.Permutation(in.Bids).Draw(t, "perm")
		shuffled := in
		shuffled.Bids = perm
		if a, b := canonicalPlan(in, p), canonicalPlan(shuffled, Match(shuffled)); a != b {
			t.Fatalf("plan depends on bid order:\n%s\n---\n%s", a, b)
		}
		// And a second run on the same input gives the same plan.
		if a, b := canonicalPlan(in, p), canonicalPlan(in, Match(in)); a != b {
			t.Fatalf("plan is not deterministic")
		}
	})
}

// TestMatchEveryoneWarmIsNoModel: when every bidder holds the RFQ's
// model, naming it changes nothing, and a cold start only ever raises a
// bid's effective price.
func TestMatchEveryoneWarmIsNoModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawMatchInput(t)
		in.RFQ.Model = nil
		plain := Match(in)
		in.RFQ.Model = &ModelRef{ID: testModelID, SizeMiB: rapid.Uint64Range(1, 200_000).Draw(t, "size")}
		in.ModelHosts = map[string]ModelHost{}
		for _, b := range in.Bids {
			if b != nil {
				in.ModelHosts[b.Provider] = ModelHost{Warm: true}
			}
		}
		if a, b := canonicalPlan(in, plain), canonicalPlan(in, Match(in)); a != b {
			t.Fatalf("an all-warm market changed the plan:\n%s\n---\n%s", a, b)
		}
		in.ModelHosts = nil // everyone cold at the default bandwidth
		cold := Match(in)
		for _, a := range cold.Allocations {
			if a.ColdStart <= 0 {
				t.Fatalf("cold winner %s charged no cold start", a.Provider)
			}
		}
	})
}

func checkPlan(t *rapid.T, in MatchInput, p Plan) {
	r := in.RFQ
	need := int(r.Resources.GPUs)
	// Every bid is allocated or a loser, exactly once.
	where := make([]string, len(in.Bids))
	for _, a := range p.Allocations {
		if where[a.BidIndex] != "" {
			t.Fatalf("bid %d allocated twice", a.BidIndex)
		}
		where[a.BidIndex] = "won"
	}
	for k, l := range p.Losers {
		if k > 0 && p.Losers[k-1].BidIndex >= l.BidIndex {
			t.Fatalf("losers not ordered by index at %d", k)
		}
		if where[l.BidIndex] != "" {
			t.Fatalf("bid %d both %s and a loser", l.BidIndex, where[l.BidIndex])
		}
		if l.Code == "" || l.Reason == "" {
			t.Fatalf("loser %+v without code or reason", l)
		}
		where[l.BidIndex] = l.Code
	}
	for i, w := range where {
		if w == "" {
			t.Fatalf("bid %d is neither allocated nor a loser", i)
		}
	}
	// Backups are exactly the feasible losers.
	for _, i := range p.Backups {
		if where[i] != RejectOutranked && where[i] != RejectUnfilled {
			t.Fatalf("backup %d has code %q", i, where[i])
		}
	}
	nfeasibleLosers := 0
	for _, w := range where {
		if w == RejectOutranked || w == RejectUnfilled {
			nfeasibleLosers++
		}
	}
	if nfeasibleLosers != len(p.Backups) {
		t.Fatalf("%d feasible losers, %d backups", nfeasibleLosers, len(p.Backups))
	}
	// The hand-written filter agrees with the matcher in both directions.
	for i := range in.Bids {
		f, ok := feasibleByHand(in, i)
		if !ok {
			continue
		}
		got := where[i] == "won" || where[i] == RejectOutranked || where[i] == RejectUnfilled
		if f != got {
			t.Fatalf("bid %d %+v: feasible by hand %v, matcher says %q", i, in.Bids[i], f, where[i])
		}
	}
	if p.Unfilled != "" {
		if len(p.Allocations) != 0 {
			t.Fatalf("unfilled plan with allocations")
		}
		return
	}
	if len(p.Allocations) == 0 {
		t.Fatalf("filled plan without allocations")
	}
	if need == 0 {
		// CPU-only: one GPU-less bid wins alone, at its price.
		a := p.Allocations[0]
		if len(p.Allocations) != 1 || len(a.GPUs) != 0 || a.PriceMicro != in.Bids[a.BidIndex].PriceMicro {
			t.Fatalf("CPU-only plan %+v, want one GPU-less allocation at its bid's price", p.Allocations)
		}
		return
	}
	sum := 0
	providers := map[string]bool{}
	var maxWinningBid uint64
	modelPrice := map[string]uint64{}
	for _, a := range p.Allocations {
		b := in.Bids[a.BidIndex]
		sum += len(a.GPUs)
		if len(a.GPUs) == 0 || !slices.Equal(a.GPUs, b.GPUs[:len(a.GPUs)]) {
			t.Fatalf("allocation %+v is not a non-empty prefix of %v", a, b.GPUs)
		}
		if providers[a.Provider] || a.Provider != b.Provider {
			t.Fatalf("provider %s twice or wrong", a.Provider)
		}
		providers[a.Provider] = true
		if a.PriceMicro > r.MaxPriceMicro {
			t.Fatalf("allocation priced %d above max %d", a.PriceMicro, r.MaxPriceMicro)
		}
		if math.IsNaN(a.EffectivePrice) || math.IsInf(a.EffectivePrice, 0) {
			t.Fatalf("effective price %v", a.EffectivePrice)
		}
		maxWinningBid = max(maxWinningBid, b.PriceMicro)
		switch r.Pricing {
		case PaySecond:
			if c, ok := modelPrice[b.Model]; a.PriceMicro < b.PriceMicro || a.PriceMicro > p.ClearingPriceMicro || ok && c != a.PriceMicro {
				t.Fatalf("second price %d below bid %d, above clearing %d or not uniform for model %s", a.PriceMicro, b.PriceMicro, p.ClearingPriceMicro, b.Model)
			}
			modelPrice[b.Model] = a.PriceMicro
		default:
			if a.PriceMicro != b.PriceMicro {
				t.Fatalf("first price %d, bid %d", a.PriceMicro, b.PriceMicro)
			}
		}
	}
	if sum != need {
		t.Fatalf("allocated %d GPUs, want %d", sum, need)
	}
	if r.Pricing == PaySecond && p.ClearingPriceMicro < maxWinningBid {
		t.Fatalf("clearing %d below winning bid %d", p.ClearingPriceMicro, maxWinningBid)
	}
	// A pool only forms when no single feasible bid can hold the job, and
	// then every winner ranks before every backup, all but the last in full.
	if len(p.Allocations) > 1 && !in.Weights.RankPools {
		for _, i := range p.Backups {
			if len(in.Bids[i].GPUs) >= need {
				t.Fatalf("pooled although backup %d holds %d GPUs", i, need)
			}
		}
		last := p.Allocations[len(p.Allocations)-1].EffectivePrice
		for k, a := range p.Allocations[:len(p.Allocations)-1] {
			if len(a.GPUs) != len(in.Bids[a.BidIndex].GPUs) {
				t.Fatalf("pool member %d not taken in full", k)
			}
			if a.EffectivePrice > last {
				t.Fatalf("pool not in rank order")
			}
		}
	}
}

// canonicalPlan renders p with bids named by content instead of index, so
// plans for permuted inputs compare equal. Reasons are left out: some cite
// indices.
func canonicalPlan(in MatchInput, p Plan) string {
	key := func(i int) string {
		if in.Bids[i] == nil {
			return "nil"
		}
		return fmt.Sprintf("%+v", *in.Bids[i])
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "unfilled=%q clearing=%d\n", p.Unfilled, p.ClearingPriceMicro)
	for _, a := range p.Allocations {
		fmt.Fprintf(&sb, "alloc %s %v %d %v\n", key(a.BidIndex), a.GPUs, a.PriceMicro, a.EffectivePrice)
	}
	for _, i := range p.Backups {
		fmt.Fprintf(&sb, "backup %s\n", key(i))
	}
	var losers []string
	for _, l := range p.Losers {
		losers = append(losers, l.Code+" "+key(l.BidIndex))
	}
	slices.Sort(losers)
	sb.WriteString(strings.Join(losers, "\n"))
	return sb.String()
}
