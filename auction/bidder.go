package auction

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The bidder is the provider's side of DESIGN.md §6 step 2: given an RFQ
// that passed the topic validator and this node's own capacity, decide
// whether to bid, with which GPUs and at what price. Like the matcher it
// is pure: the node passes the clock, its holds, its bronze leases and its
// latest telemetry, and seals and sends the bid itself.

// No-bid codes, in the order Quote checks them.
const (
	NoBidInput    = "bad_input"   // nil RFQ or capacity
	NoBidExpired  = "rfq_expired" // the RFQ expired at Now
	NoBidRuntime  = "runtime"     // runtime not offered
	NoBidTier     = "tier"        // tier not accepted (or no floor for it)
	NoBidRegion   = "region"      // our country is not in the RFQ's regions
	NoBidDuration = "duration"    // longer (or unbounded) than Policy.MaxDurationSec
	NoBidImage    = "image"       // docker image not in Policy.AllowedImages
	NoBidEgress   = "egress"      // job wants network access, policy forbids it
	NoBidHost     = "host"        // host CPU, RAM or disk below the request
	NoBidNotice   = "notice"      // bronze: renter wants more notice than we give
	NoBidStart    = "start"       // the RFQ's start-by has passed
	NoBidCalendar = "calendar"    // outside the calendar, or it closes too soon
	NoBidGPUs     = "no_gpus"     // no offerable GPU fits; Reason counts why
	NoBidPrice    = "above_max"   // our price is above the RFQ's maximum
)

// ErrNoBid is wrapped by every *NoBid, for errors.Is.
var ErrNoBid = errors.New("no bid")

// NoBid is Quote's refusal: a code for metrics and a reason for the log.
type NoBid struct {
	Code   string
	Reason string
}

func (e *NoBid) Error() string { return "auction.Quote: no bid (" + e.Code + "): " + e.Reason }

// Unwrap makes errors.Is(err, ErrNoBid) hold.
func (e *NoBid) Unwrap() error { return ErrNoBid }

func noBid(code, format string, args ...any) (Quotation, error) {
	return Quotation{}, &NoBid{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// GPUHealth is the latest telemetry of one GPU, keyed by UUID in
// QuoteInput.Telemetry. A GPU without an entry counts as healthy:
// telemetry lags, and a missing sample is not a fault.
type GPUHealth struct {
	TemperatureC float64
	PowerW       float64
	PowerLimitW  float64 // 0: unknown, no power check
	// ThrottleReasons is the NVML clocks-event bitmask (node/gpu's
	// ThrottleReasons); see ThrottleUnhealthy.
	ThrottleReasons uint64
}

// ThrottleUnhealthy are the NVML clocks-event bits that make an idle GPU
// unfit to offer: hardware slowdown, software and hardware thermal
// slowdown, and the power brake. Idle, application clocks and the software
// power cap are normal and ignored.
const ThrottleUnhealthy uint64 = 0x8 | 0x20 | 0x40 | 0x80

// BronzeLease is a GPU running interruptible work, which a gold or silver
// job may preempt after the notice promised to its renter.
type BronzeLease struct {
	LeaseID   string
	NoticeSec uint32
}

// BidPolicy is the operator's bidding policy.
type BidPolicy struct {
	// A GPU is not offered when TemperatureC > MaxTempC - ThermalHeadroomC
	// (0 MaxTempC: 85 °C).
	MaxTempC         float64
	ThermalHeadroomC float64
	// PowerHeadroom is a fraction: a GPU drawing more than
	// PowerLimitW*(1-PowerHeadroom) is busy with something we don't see.
	PowerHeadroom float64
	// UtilizationK is k in the utilization factor 1 + k*u², where u is the
	// share of this host's GPUs not free to offer before this bid: prices
	// rise as free GPUs run out, gently at first.
	UtilizationK float64
	// GapDiscount (a fraction) applies when the job fills a gap: the
	// calendar's current open period ends within GapMaxSec and the job's
	// maximum duration fits before it ends. Such leftovers rarely sell
	// to anyone else, so the GPUs would otherwise idle until the close.
	GapDiscount float64
	GapMaxSec   uint64
	// NoticeSec is the preemption notice promised on bronze bids.
	NoticeSec uint32
	// BidValidity is how long a bid (and the hold on its GPUs) outlives
	// the RFQ's bid window, for the award to arrive (0: one minute).
	BidValidity time.Duration
}

// DefaultBidPolicy is a conservative policy for a datacenter GPU host.
func DefaultBidPolicy() BidPolicy {
	return BidPolicy{
		MaxTempC: 85, ThermalHeadroomC: 10, PowerHeadroom: 0.1,
		UtilizationK: 0.5, GapDiscount: 0.15, GapMaxSec: 4 * 3600,
		NoticeSec: 300, BidValidity: time.Minute,
	}
}

// QuoteInput is everything Quote looks at. Nothing in it is changed.
type QuoteInput struct {
	RFQ   *RFQ
	RFQID string // record ID of the RFQ, copied into the bid
	// Capacity is this provider's current offer: GPUs with their Free
	// flag, host, region, floor, calendar and policy.
	Capacity *Capacity
	// Held are GPUs promised in pending bids; they are not offered again
	// until the bid expires or loses (the node owns the holds).
	Held map[string]bool
	// Bronze are GPUs on bronze leases, offerable to gold and silver RFQs
	// after their notice.
	Bronze    map[string]BronzeLease
	Telemetry map[string]GPUHealth
	Now       time.Time
	Policy    BidPolicy
}

// Quotation is a bid ready to seal, and how its price was made.
type Quotation struct {
	// Bid has every field set except what sealing adds; the node should
	// hold Bid.GPUs until Bid.ValidUntilMs.
	Bid            Bid
	FloorMicro     uint64
	CalendarFactor float64 // the window's FactorPermille / 1000
	UtilFactor     float64 // 1 + k*u²
	GapFactor      float64 // 1 - GapDiscount, or 1
}

// Quote decides whether this provider bids on in.RFQ and prices the bid:
//
//	price = max(floor(tier), floor × calendar × (1 + k·u²) × gap)
//
// rounded to the nearest uUSD, and no bid when that exceeds the RFQ's
// maximum. It offers min(requested, offerable) GPUs of one model: a
// partial bid is still useful, since renters pool them. For a gold or
// silver RFQ, GPUs on bronze leases are offerable after their notice (free
// ones are used first), and the bid's EarliestStartMs says when. A refusal
// is a *NoBid wrapping ErrNoBid.
func Quote(in QuoteInput) (Quotation, error) {
	r, c := in.RFQ, in.Capacity
	if r == nil || c == nil {
		return noBid(NoBidInput, "nil RFQ or capacity")
	}
	pol := in.Policy
	if pol.MaxTempC == 0 {
		pol.MaxTempC = 85
	}
	if pol.BidValidity <= 0 {
		pol.BidValidity = time.Minute
	}
	nowMs := in.Now.UnixMilli()
	floor := c.Floor.For(r.Tier)
	jobSec := r.MaxDurationSec
	if jobSec == 0 {
		jobSec = r.ExpectedDurationSec
	}
	switch {
	case nowMs >= r.ExpiresAtMs:
		return noBid(NoBidExpired, "RFQ expired at %d, now %d", r.ExpiresAtMs, nowMs)
	case !slices.Contains(c.Runtimes, r.Runtime):
		return noBid(NoBidRuntime, "runtime %q not in %v", r.Runtime, c.Runtimes)
	case !c.Accepts(r.Tier) || floor == 0:
		return noBid(NoBidTier, "tier %q not accepted (tiers %v)", r.Tier, c.Policy.Tiers)
	case len(r.Regions) > 0 && !slices.Contains(r.Regions, c.Region.Country):
		return noBid(NoBidRegion, "region %q not in %v", c.Region.Country, r.Regions)
	case c.Policy.MaxDurationSec != 0 && (jobSec == 0 || jobSec > c.Policy.MaxDurationSec):
		return noBid(NoBidDuration, "job may run %d s (0: unbounded), policy allows %d s", jobSec, c.Policy.MaxDurationSec)
	case r.Runtime == RuntimeDocker && len(c.Policy.AllowedImages) > 0 && !ImageAllowed(c.Policy.AllowedImages, r.Image):
		return noBid(NoBidImage, "image %q not allowed by %v", r.Image, c.Policy.AllowedImages)
	case r.Egress && !c.Policy.Egress:
		return noBid(NoBidEgress, "job needs egress, policy forbids it")
	case r.Resources.CPUCores > c.Host.CPUCores || r.Resources.RAMMiB > c.Host.RAMMiB || r.Resources.DiskGiB > c.Host.DiskGiB:
		return noBid(NoBidHost, "job needs %d cores, %d MiB RAM, %d GiB disk; host has %d, %d, %d",
			r.Resources.CPUCores, r.Resources.RAMMiB, r.Resources.DiskGiB, c.Host.CPUCores, c.Host.RAMMiB, c.Host.DiskGiB)
	case r.Tier == TierBronze && r.MinNoticeSec > pol.NoticeSec:
		return noBid(NoBidNotice, "renter wants %d s notice, policy gives %d s", r.MinNoticeSec, pol.NoticeSec)
	case r.StartByMs != 0 && nowMs > r.StartByMs:
		return noBid(NoBidStart, "start-by %d has passed (now %d)", r.StartByMs, nowMs)
	}
	factor, open := c.WindowAt(in.Now)
	if !open {
		return noBid(NoBidCalendar, "calendar closed at %s", in.Now.UTC().Format("Mon 15:04"))
	}
	left, bounded := openFor(c.Calendar, in.Now)
	// Gold and silver jobs must be expected to finish inside the open
	// period; a bronze job can be preempted at the close, as long as the
	// promised notice still fits.
	if bounded {
		need := time.Duration(r.ExpectedDurationSec) * time.Second
		if r.Tier == TierBronze {
			need = time.Duration(pol.NoticeSec) * time.Second
		}
		if need > left {
			return noBid(NoBidCalendar, "calendar closes in %s, %s job needs %s", left, r.Tier, need)
		}
	}

	pick, why := pickGPUs(in, pol)
	if len(pick.gpus) == 0 {
		return noBid(NoBidGPUs, "no offerable GPU: %s", why)
	}

	q := Quotation{FloorMicro: floor, CalendarFactor: float64(factor) / 1000, UtilFactor: 1, GapFactor: 1}
	if n := len(c.GPUs); n > 0 {
		offerable := 0
		for _, g := range c.GPUs {
			if g.Free && !in.Held[g.UUID] {
				offerable++
			}
		}
		u := float64(n-offerable) / float64(n)
		q.UtilFactor = 1 + max(pol.UtilizationK, 0)*u*u
	}
	if bounded && jobSec > 0 && left <= time.Duration(pol.GapMaxSec)*time.Second && time.Duration(jobSec)*time.Second <= left {
		q.GapFactor = 1 - min(max(pol.GapDiscount, 0), 1)
	}
	price := math.Round(float64(floor) * q.CalendarFactor * q.UtilFactor * q.GapFactor)
	priceMicro := floor
	if price > float64(floor) {
		priceMicro = uint64(min(price, math.MaxUint64/2))
	}
	if priceMicro > r.MaxPriceMicro {
		return noBid(NoBidPrice, "price %d uUSD/GPU-h (floor %d × calendar %.3g × utilization %.3g × gap %.3g) above max %d",
			priceMicro, floor, q.CalendarFactor, q.UtilFactor, q.GapFactor, r.MaxPriceMicro)
	}

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
	q.Bid = b
	return q, nil
}

// picked is the GPU set Quote offers: one model, free GPUs first.
type picked struct {
	model   string
	vramMiB uint64 // the least VRAM among gpus
	gpus    []*GPU
}

// pickGPUs chooses up to RFQ.Resources.GPUs offerable GPUs of one model
// (the model with the most; ties: more VRAM, then slug), or explains why
// there are none.
func pickGPUs(in QuoteInput, pol BidPolicy) (picked, string) {
	r, c := in.RFQ, in.Capacity
	nowMs := in.Now.UnixMilli()
	minMaj, minMin, ccErr := ParseComputeCap(r.Resources.MinComputeCap)
	var count struct{ busy, held, model, vram, cc, hot, power, throttled, late int }
	groups := map[string][]*GPU{}
	for i := range c.GPUs {
		g := &c.GPUs[i]
		bl, bronze := in.Bronze[g.UUID]
		preempt := !g.Free && bronze && r.Tier != TierBronze
		h, hasHealth := in.Telemetry[g.UUID]
		switch {
		case !g.Free && !preempt:
			count.busy++
			continue
		case in.Held[g.UUID]:
			count.held++
			continue
		case !ModelAccepted(r.Resources.Models, g.Model):
			count.model++
			continue
		case g.VRAMMiB < r.Resources.MinVRAMMiB:
			count.vram++
			continue
		case r.Resources.MinComputeCap != "" && (ccErr != nil || !computeCapMeets(g.ComputeCap, minMaj, minMin)):
			count.cc++
			continue
		case preempt && r.StartByMs != 0 && nowMs+int64(bl.NoticeSec)*1000 > r.StartByMs:
			count.late++
			continue
		}
		// Only a GPU that is actually running bronze work is hot for a
		// reason we know about; a free GPU must be cool and quiet.
		if hasHealth && !preempt {
			switch {
			case h.TemperatureC > pol.MaxTempC-pol.ThermalHeadroomC:
				count.hot++
				continue
			case h.PowerLimitW > 0 && h.PowerW > h.PowerLimitW*(1-pol.PowerHeadroom):
				count.power++
				continue
			case h.ThrottleReasons&ThrottleUnhealthy != 0:
				count.throttled++
				continue
			}
		}
		groups[g.Model] = append(groups[g.Model], g)
	}
	var best picked
	for model, gs := range groups {
		// Free GPUs first, then bronze ones with the shortest notice.
		slices.SortStableFunc(gs, func(a, b *GPU) int {
			if a.Free != b.Free {
				if a.Free {
					return -1
				}
				return 1
			}
			return cmp.Compare(in.Bronze[a.UUID].NoticeSec, in.Bronze[b.UUID].NoticeSec)
		})
		gs = gs[:min(len(gs), int(r.Resources.GPUs))]
		if len(gs) == 0 {
			continue
		}
		cand := picked{model: model, gpus: gs, vramMiB: gs[0].VRAMMiB}
		for _, g := range gs {
			cand.vramMiB = min(cand.vramMiB, g.VRAMMiB)
		}
		if best.gpus == nil || cmp.Or(
			cmp.Compare(len(cand.gpus), len(best.gpus)),
			cmp.Compare(cand.vramMiB, best.vramMiB),
			strings.Compare(best.model, cand.model)) > 0 {
			best = cand
		}
	}
	if best.gpus != nil {
		return best, ""
	}
	why := fmt.Sprintf("%d GPUs: %d busy, %d held, %d wrong model, %d low VRAM, %d low compute capability, "+
		"%d preemptible too late, %d too hot, %d near power limit, %d throttled",
		len(c.GPUs), count.busy, count.held, count.model, count.vram, count.cc, count.late, count.hot, count.power, count.throttled)
	if r.Resources.GPUs == 0 {
		why = "the RFQ requests no GPUs"
	}
	return picked{}, why
}

func computeCapMeets(cc string, major, minor int) bool {
	maj, mnr, err := ParseComputeCap(cc)
	return err == nil && (maj > major || maj == major && mnr >= minor)
}

// openFor returns how long the calendar stays open from t, following
// windows that abut (Monday 22:00-24:00 then Tuesday 00:00-06:00 is one
// period). bounded is false for an empty calendar, or one open all week.
func openFor(cal []Window, t time.Time) (left time.Duration, bounded bool) {
	if len(cal) == 0 {
		return 0, false
	}
	t = t.UTC()
	at := t
	// A week has at most 7*24 windows; one more step proves it wraps.
	for range MaxWindows + 1 {
		day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
		minute := uint16(at.Sub(day) / time.Minute)
		i := slices.IndexFunc(cal, func(w Window) bool {
			return w.Day == at.Weekday() && minute >= w.StartMin && minute < w.EndMin
		})
		if i < 0 {
			return at.Sub(t), true
		}
		at = day.Add(time.Duration(cal[i].EndMin) * time.Minute)
		if at.Sub(t) >= 7*24*time.Hour {
			return 0, false
		}
	}
	return 0, false
}

// ImageAllowed reports whether a docker image reference "REF@sha256:<hex>"
// passes an allow list: an entry "sha256:<hex prefix>" matches the digest,
// any other entry is a pattern for the reference in which '*' matches any
// run of characters, '/' included, tried against the reference with and
// without its tag ("ghcr.io/acme/*" allows "ghcr.io/acme/train:v2@sha256:…").
func ImageAllowed(allowed []string, image string) bool {
	ref, digest, _ := strings.Cut(image, "@")
	repo := ref
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		repo = ref[:i]
	}
	for _, p := range allowed {
		if strings.HasPrefix(p, "sha256:") {
			if digest != "" && strings.HasPrefix(digest, p) {
				return true
			}
			continue
		}
		if globMatch(p, ref) || globMatch(p, repo) {
			return true
		}
	}
	return false
}

// globMatch matches s against a pattern whose only wildcard is '*'.
func globMatch(pattern, s string) bool {
	// Greedy matching with backtracking to the last star: linear for the
	// short patterns policies hold.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
