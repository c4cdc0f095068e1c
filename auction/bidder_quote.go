package auction

import (
	"slices"
	"time"
)

// Quote runs in three steps, like Match: filter (may this provider bid at
// all), pick (which GPUs), price (at what price). Each step is its own
// function, so a caller replaying the market can see where a bid is lost.

// Quote decides whether this provider bids on in.RFQ and prices the bid:
//
//	price = max(floor(tier), floor × calendar × scarcity) × gap
//
// rounded to the nearest uUSD (see quotePrice), and no bid when that
// exceeds the RFQ's maximum. It offers min(requested, offerable) GPUs of
// one model: a partial bid is still useful, since renters pool them. For a
// gold or silver RFQ, GPUs on bronze leases are offerable after their
// notice (free ones are used first), and the bid's EarliestStartMs says
// when. A refusal is a *NoBid wrapping ErrNoBid.
//
// Zero RFQ fields a replay has no use for do not refuse the quote: an
// ExpiresAtMs of 0 never expires and an empty Runtime accepts any runtime
// the provider offers.
func Quote(in QuoteInput) (Quotation, error) {
	pol := in.Policy
	if pol.MaxTempC == 0 {
		pol.MaxTempC = 85
	}
	if pol.BidValidity <= 0 {
		pol.BidValidity = time.Minute
	}
	cal, err := quoteFilter(in, pol)
	if err != nil {
		return Quotation{}, err
	}
	if in.RFQ.Resources.GPUs == 0 {
		return quoteCPU(in, pol, cal)
	}
	pick, why := pickGPUs(in, pol)
	if len(pick.gpus) == 0 {
		return noBid(NoBidGPUs, "no offerable GPU: %s", why)
	}
	q, err := quotePrice(in, pol, cal)
	if err != nil {
		return Quotation{}, err
	}
	q.Bid = bidFor(in, pol, pick, q.Bid.PriceMicro)
	return q, nil
}

// calendarView is what the filter learned of the calendar for the price.
type calendarView struct {
	factorPermille uint32
	left           time.Duration // how long the open period lasts
	bounded        bool
}

// quoteFilter is the first step: the rules that refuse a quote outright.
func quoteFilter(in QuoteInput, pol BidPolicy) (calendarView, error) {
	r, c := in.RFQ, in.Capacity
	if r == nil || c == nil {
		_, err := noBid(NoBidInput, "nil RFQ or capacity")
		return calendarView{}, err
	}
	nowMs := in.Now.UnixMilli()
	floor := c.Floor.For(r.Tier)
	jobSec := r.MaxDurationSec
	if jobSec == 0 {
		jobSec = r.ExpectedDurationSec
	}
	refuse := func(code, format string, args ...any) (calendarView, error) {
		_, err := noBid(code, format, args...)
		return calendarView{}, err
	}
	switch {
	case r.ExpiresAtMs != 0 && nowMs >= r.ExpiresAtMs:
		return refuse(NoBidExpired, "RFQ expired at %d, now %d", r.ExpiresAtMs, nowMs)
	case r.Runtime != "" && !slices.Contains(c.Runtimes, r.Runtime):
		return refuse(NoBidRuntime, "runtime %q not in %v", r.Runtime, c.Runtimes)
	case !c.Accepts(r.Tier) || floor == 0:
		return refuse(NoBidTier, "tier %q not accepted (tiers %v)", r.Tier, c.Policy.Tiers)
	case len(r.Regions) > 0 && !slices.Contains(r.Regions, c.Region.Country):
		return refuse(NoBidRegion, "region %q not in %v", c.Region.Country, r.Regions)
	case c.Policy.MaxDurationSec != 0 && (jobSec == 0 || jobSec > c.Policy.MaxDurationSec):
		return refuse(NoBidDuration, "job may run %d s (0: unbounded), policy allows %d s", jobSec, c.Policy.MaxDurationSec)
	case r.Runtime == RuntimeDocker && len(c.Policy.AllowedImages) > 0 && !ImageAllowed(c.Policy.AllowedImages, r.Image):
		return refuse(NoBidImage, "image %q not allowed by %v", r.Image, c.Policy.AllowedImages)
	case r.Egress && !c.Policy.Egress:
		return refuse(NoBidEgress, "job needs egress, policy forbids it")
	case r.Resources.CPUCores > c.Host.CPUCores || r.Resources.RAMMiB > c.Host.RAMMiB || r.Resources.DiskGiB > c.Host.DiskGiB:
		return refuse(NoBidHost, "job needs %d cores, %d MiB RAM, %d GiB disk; host has %d, %d, %d",
			r.Resources.CPUCores, r.Resources.RAMMiB, r.Resources.DiskGiB, c.Host.CPUCores, c.Host.RAMMiB, c.Host.DiskGiB)
	case r.Tier == TierBronze && r.MinNoticeSec > pol.NoticeSec:
		return refuse(NoBidNotice, "renter wants %d s notice, policy gives %d s", r.MinNoticeSec, pol.NoticeSec)
	case r.StartByMs != 0 && nowMs > r.StartByMs:
		return refuse(NoBidStart, "start-by %d has passed (now %d)", r.StartByMs, nowMs)
	}
	factor, open := c.WindowAt(in.Now)
	if !open {
		return refuse(NoBidCalendar, "calendar closed at %s", in.Now.UTC().Format("Mon 15:04"))
	}
	left, bounded := openFor(c.Calendar, in.Now)
	if need := calendarNeed(r, pol.NoticeSec); bounded && need > left {
		return refuse(NoBidCalendar, "calendar closes in %s, %s job needs %s", left, r.Tier, need)
	}
	return calendarView{factorPermille: factor, left: left, bounded: bounded}, nil
}

// bidFor fills the bid for the picked GPUs at priceMicro.
func bidFor(in QuoteInput, pol BidPolicy, pick picked, priceMicro uint64) Bid {
	r, c := in.RFQ, in.Capacity
	nowMs := in.Now.UnixMilli()
	start := nowMs
	for _, g := range pick.gpus {
		if bl, ok := in.Bronze[g.UUID]; ok && !g.Free {
			start = max(start, nowMs+int64(bl.NoticeSec)*1000)
		}
	}
	b := Bid{
		V: MessagesVersion, Provider: c.Peer, RFQ: in.RFQID, JobCID: r.JobCID,
		PriceMicro: priceMicro, Model: pick.model, VRAMMiB: pick.vramMiB, Region: c.Region.Country,
		EarliestStartMs: start, IssuedAtMs: nowMs,
		// Valid until the bid window closes plus BidValidity for the award,
		// within the lifetime a bid may have (that of an RFQ).
		ValidUntilMs: min(max(nowMs, r.IssuedAtMs+int64(r.BidWindowMs))+pol.BidValidity.Milliseconds(),
			nowMs+MaxRFQLifetimeMs),
	}
	for _, g := range pick.gpus {
		b.GPUs = append(b.GPUs, g.UUID)
	}
	for _, d := range r.Datasets {
		if slices.Contains(c.Datasets, d) && !slices.Contains(b.Datasets, d) {
			b.Datasets = append(b.Datasets, d)
		}
	}
	if r.Tier == TierBronze {
		b.NoticeSec = pol.NoticeSec
	}
	return b
}
