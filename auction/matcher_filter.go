package auction

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The matcher's filter and score stages: which bids may win, and how
// they rank.

// latestBids picks, per provider, the index of its current bid: the latest
// IssuedAtMs among the bids that name this RFQ and are not from a
// decliner. Ties fall to compareBidContent, so the choice depends only on
// the bids, not their order.
func latestBids(in MatchInput) map[string]int {
	latest := make(map[string]int, len(in.Bids))
	for i, b := range in.Bids {
		if b == nil || !forRFQ(in, b) || in.Declined[b.Provider] {
			continue
		}
		j, ok := latest[b.Provider]
		if !ok {
			latest[b.Provider] = i
			continue
		}
		o := in.Bids[j]
		c := cmp.Compare(o.IssuedAtMs, b.IssuedAtMs)
		if c == 0 {
			c = compareBidContent(b, o)
		}
		if c < 0 || c == 0 && i < j {
			latest[b.Provider] = i
		}
	}
	return latest
}

func forRFQ(in MatchInput, b *Bid) bool {
	return b.RFQ == in.RFQID && b.JobCID == in.RFQ.JobCID
}

// compareBidContent orders two bids of one provider with equal IssuedAtMs,
// the better offer first (cheaper, more GPUs, valid longer), then by every
// remaining field so that only identical bids compare equal.
func compareBidContent(a, b *Bid) int {
	return cmp.Or(
		cmp.Compare(a.PriceMicro, b.PriceMicro),
		cmp.Compare(len(b.GPUs), len(a.GPUs)),
		cmp.Compare(b.ValidUntilMs, a.ValidUntilMs),
		cmp.Compare(a.EarliestStartMs, b.EarliestStartMs),
		cmp.Compare(b.NoticeSec, a.NoticeSec),
		cmp.Compare(b.VRAMMiB, a.VRAMMiB),
		strings.Compare(a.Model, b.Model),
		strings.Compare(a.Region, b.Region),
		slices.Compare(a.GPUs, b.GPUs),
		slices.Compare(a.Datasets, b.Datasets),
		cmp.Compare(a.V, b.V),
	)
}

// filter holds what every bid's checks share.
type filter struct {
	in     MatchInput
	rfq    *RFQ
	nowMs  int64
	minRel float64
	// probationRel is the probation bar (Weights.ExcludeBelowPrior) when
	// it applies to this RFQ, else 0.
	probationRel float64
	regions      map[string]bool
	datasets     map[string]bool
	// The RFQ's lists, rendered once for the rejection reasons.
	regionsText, modelsText string
}

func newFilter(in MatchInput) *filter {
	f := &filter{in: in, rfq: in.RFQ, nowMs: in.Now.UnixMilli(), minRel: float64(in.RFQ.MinReliabilityPermille) / 1000}
	// A provider whose record is clearly worse than a newcomer's (the
	// prior) is on probation: refused for large work above bronze, so the
	// renter waits for other GPUs there, but free to win small work.
	w := in.Weights.sanitized()
	if probationApplies(in.RFQ, w) {
		f.probationRel = in.Prior - w.ExcludeBelowPrior
	}
	if len(in.RFQ.Regions) > 0 {
		f.regions = make(map[string]bool, len(in.RFQ.Regions))
		for _, r := range in.RFQ.Regions {
			f.regions[r] = true
		}
	}
	f.regionsText = fmt.Sprint(in.RFQ.Regions)
	f.modelsText = fmt.Sprint(in.RFQ.Resources.Models)
	if len(in.RFQ.Datasets) > 0 {
		f.datasets = make(map[string]bool, len(in.RFQ.Datasets))
		for _, d := range in.RFQ.Datasets {
			f.datasets[d] = true
		}
	}
	return f
}

// reliability is the provider's score clamped to 0..1; Prior for a
// provider without one.
func (f *filter) reliability(prov string) float64 {
	r, ok := f.in.Reputation[prov]
	if !ok || math.IsNaN(r) {
		r = f.in.Prior
	}
	if math.IsNaN(r) {
		return 0
	}
	return min(max(r, 0), 1)
}

// check returns the first rule bid i breaks, or "".
func (f *filter) check(i int, b *Bid, latest map[string]int) (code, reason string) {
	rfq := f.rfq
	switch {
	case b == nil:
		return RejectMalformed, "nil bid"
	case !forRFQ(f.in, b):
		return RejectWrongRFQ, fmt.Sprintf("bid names RFQ %q job %q, want %q job %q", b.RFQ, b.JobCID, f.in.RFQID, rfq.JobCID)
	case f.in.Declined[b.Provider]:
		return RejectDeclined, "provider declined an award for this RFQ"
	case latest[b.Provider] != i:
		return RejectSuperseded, fmt.Sprintf("superseded by the provider's bid %d (issued %d, this one %d)",
			latest[b.Provider], f.in.Bids[latest[b.Provider]].IssuedAtMs, b.IssuedAtMs)
	case f.in.Unbacked[b.Provider] != "":
		return RejectUnbacked, f.in.Unbacked[b.Provider]
	case len(b.GPUs) == 0 && rfq.Resources.GPUs > 0:
		return RejectNoGPUs, "bid offers no GPUs"
	case len(b.GPUs) > 0 && rfq.Resources.GPUs == 0:
		return RejectNoGPUs, "bid offers GPUs to a CPU-only request"
	}
	if why := malformedGPUs(b.GPUs); why != "" {
		return RejectMalformed, why
	}
	if f.nowMs >= b.ValidUntilMs {
		return RejectExpired, fmt.Sprintf("valid until %d, now %d", b.ValidUntilMs, f.nowMs)
	}
	if b.PriceMicro > rfq.MaxPriceMicro {
		return RejectPrice, fmt.Sprintf("price %d uUSD/GPU-h above max %d", b.PriceMicro, rfq.MaxPriceMicro)
	}
	if rel := f.reliability(b.Provider); rel < f.minRel {
		return RejectReliability, fmt.Sprintf("reliability %.3f below minimum %.3f", rel, f.minRel)
	}
	if rel := f.reliability(b.Provider); rel < f.probationRel {
		return RejectReliability, fmt.Sprintf("reliability %.3f below %.3f (the prior %.3f less the margin): on probation, it may win only bronze work or up to %g GPU-hours",
			rel, f.probationRel, f.in.Prior, f.in.Weights.sanitized().ProbationGPUHours)
	}
	if rtt, ok := f.in.RTT[b.Provider]; ok && rfq.MaxRTTMs > 0 && rtt > time.Duration(rfq.MaxRTTMs)*time.Millisecond {
		return RejectRTT, fmt.Sprintf("RTT %s above max %d ms", rtt, rfq.MaxRTTMs)
	}
	if f.regions != nil && !f.regions[b.Region] {
		return RejectRegion, fmt.Sprintf("region %q not in %s", b.Region, f.regionsText)
	}
	if !ModelAccepted(rfq.Resources.Models, b.Model) {
		return RejectModel, fmt.Sprintf("model %q not in %s", b.Model, f.modelsText)
	}
	if b.VRAMMiB < rfq.Resources.MinVRAMMiB {
		return RejectVRAM, fmt.Sprintf("VRAM %d MiB below minimum %d MiB", b.VRAMMiB, rfq.Resources.MinVRAMMiB)
	}
	if rfq.Tier == TierBronze && b.NoticeSec < rfq.MinNoticeSec {
		return RejectNotice, fmt.Sprintf("preemption notice %d s shorter than %d s", b.NoticeSec, rfq.MinNoticeSec)
	}
	if rfq.StartByMs != 0 && b.EarliestStartMs > rfq.StartByMs {
		return RejectStart, fmt.Sprintf("earliest start %d after start-by %d", b.EarliestStartMs, rfq.StartByMs)
	}
	if f.in.Terms != nil {
		if why := f.in.Terms.Accepts(b.LeaseTerms()); why != "" {
			return RejectTerms, why
		}
	}
	return "", ""
}

// malformedGPUs checks the GPU list a renter would award from: a repeated
// or empty UUID would make a pool count GPUs that do not exist.
func malformedGPUs(gpus []string) string {
	if len(gpus) > MaxGPUsPerHost {
		return fmt.Sprintf("%d GPUs, at most %d per host", len(gpus), MaxGPUsPerHost)
	}
	for i, g := range gpus {
		if g == "" {
			return fmt.Sprintf("GPU %d has an empty UUID", i)
		}
		// Lists are at most 64 long: quadratic is cheaper than a map.
		for _, h := range gpus[:i] {
			if g == h {
				return fmt.Sprintf("GPU %q listed twice", g)
			}
		}
	}
	return ""
}

// candidate scores a feasible bid; lower eff is better.
func (f *filter) candidate(i int, b *Bid, w Weights) candidate {
	c := candidate{idx: i, bid: b, gpus: len(b.GPUs), rel: f.reliability(b.Provider), locality: 1}
	rtt, ok := f.in.RTT[b.Provider]
	if !ok {
		rtt = w.UnknownRTT
		if f.rfq.MaxRTTMs > 0 {
			rtt = time.Duration(f.rfq.MaxRTTMs) * time.Millisecond
		}
	}
	c.rttCost = w.RTTPerMs * float64(max(rtt, 0)) / float64(time.Millisecond)
	if f.datasets != nil && w.LocalityBonus > 0 {
		held := 0
		for i, d := range b.Datasets {
			// Count each requested dataset once, however often it is listed.
			if f.datasets[d] && !slices.Contains(b.Datasets[:i], d) {
				held++
			}
		}
		c.locality = 1 - min(w.LocalityBonus*float64(held), maxLocalityDiscount)
	}
	if w.NearBonus > 0 && slices.Contains(f.rfq.Near, b.Region) {
		// Folded into the locality factor: both scale the whole cost.
		c.locality *= 1 - w.NearBonus
	}
	c.coldStart = coldStartOf(f.rfq, f.in.ModelHosts, b.Provider)
	c.coldShare = coldStartShare(f.rfq, c.coldStart, w.ColdStartCharge)
	c.eff = c.cost(float64(b.PriceMicro)*reliabilityTerm(c.rel, w), 1)
	return c
}

// cost is the effective cost of gpus GPUs of c when its price, with the
// reliability term applied, is priced: the cold start is paid at that
// price too.
func (c candidate) cost(priced float64, gpus int) float64 {
	return (priced*(1+c.coldShare) + c.rttCost) * c.locality * float64(gpus)
}

// reliabilityTerm is what a price is multiplied by for reliability rel:
// 1 + FailureCost × (1 - rel), or 1/rel^ReliabilityExp.
func reliabilityTerm(rel float64, w Weights) float64 {
	switch {
	case w.FailureCost > 0:
		return 1 + w.FailureCost*(1-rel)
	case w.ReliabilityExp != 0:
		return 1 / math.Pow(max(rel, minScoredReliability), w.ReliabilityExp)
	}
	return 1
}

// probationApplies says whether w's probation bar refuses providers
// under it for rfq: only for work above the bronze tier and larger than
// ProbationGPUHours (GPUs times expected duration, else the maximum
// duration; a CPU-only request counts as one GPU, a request of unknown
// duration as large). Bronze and small work stay open to them, charged
// their expected failure cost, so a provider can recover from a failed
// lease.
func probationApplies(rfq *RFQ, w Weights) bool {
	w = w.sanitized()
	if w.ExcludeBelowPrior == 0 || rfq.Tier == TierBronze {
		return false
	}
	sec := cmp.Or(rfq.ExpectedDurationSec, rfq.MaxDurationSec)
	gpuHours := float64(max(rfq.Resources.GPUs, 1)) * float64(sec) / 3600
	return sec == 0 || gpuHours > w.ProbationGPUHours
}
