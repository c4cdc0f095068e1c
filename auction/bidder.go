package auction

import (
	"errors"
	"fmt"
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
	NoBidCPU      = "no_cpu"      // CPU-only job: no CPU offer, or too few free cores or RAM
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
	// ScarcityK and ScarcityFrom shape the scarcity factor
	// 1 + k*x², x = (u - from)/(1 - from) for u above from, where u is
	// QuoteInput.Market.Utilization, the busy share of the market's GPUs:
	// the price follows market-wide scarcity, not this host's own load (a
	// 1-GPU host and an 8-GPU host in the same market mark up alike), and
	// stays at the floor until the market is actually short.
	ScarcityK    float64
	ScarcityFrom float64
	// UtilizationK is k in the legacy utilization factor 1 + k*u², where u
	// is the share of this host's GPUs not free to offer before this bid.
	// It applies only when QuoteInput.Market is nil (a caller without a
	// market view).
	UtilizationK float64
	// GapDiscount (a fraction) applies when the job fills a gap: the
	// calendar's current open period ends within GapMaxSec and the job's
	// maximum duration fits before it ends. Such leftovers rarely sell
	// to anyone else, so the GPUs would otherwise idle until the close;
	// the discount may take the price below the floor, to floor×(1-d).
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
		ScarcityK: 0.2, ScarcityFrom: 0.9,
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
	// Market is what the provider knows of the whole market; nil falls
	// back to the legacy per-host utilization curve.
	Market *MarketSignal
	Now    time.Time
	Policy BidPolicy
}

// MarketSignal is the market-wide view behind scarcity pricing.
type MarketSignal struct {
	// Utilization is the busy share (0..1) of the market's GPUs the
	// provider can see (its shard's capacity records, or a simulator's
	// whole pool).
	Utilization float64
	// IndexMicro caps the scarcity markup at the price index (the median
	// cleared price for the model and tier, uUSD/GPU-h; 0: no cap): a
	// bidder never marks above what the market clears at.
	IndexMicro uint64
}

// Quotation is a bid ready to seal, and how its price was made.
type Quotation struct {
	// Bid has every field set except what sealing adds; the node should
	// hold Bid.GPUs until Bid.ValidUntilMs.
	Bid            Bid
	FloorMicro     uint64
	CalendarFactor float64 // the window's FactorPermille / 1000
	UtilFactor     float64 // the scarcity (or legacy utilization) factor
	GapFactor      float64 // 1 - GapDiscount, or 1
}
