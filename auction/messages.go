package auction

import "github.com/idlegrid/idlegrid/attest"

// Auction message kinds (DESIGN.md §6). Each is a signed attest envelope
// with canonical CBOR payload; IDs are attest.RecordID of the envelope.
// Sizes are bounded per kind: an RFQ names at most a few dozen models,
// regions and datasets; a bid at most MaxGPUsPerHost GPU UUIDs.
const (
	MaxRFQSize     = 8 << 10
	MaxBidSize     = 16 << 10
	MaxAwardSize   = 16 << 10
	MaxAcceptSize  = 12 << 10
	MaxDeclineSize = 2 << 10
	MaxPreemptSize = 2 << 10
	MaxSummarySize = 10 << 10
	// MaxEndorsedAwardSize and MaxEndorsedAcceptSize bound the award and
	// acceptance an AwardSummary carries: an award of MaxGPUsPerHost
	// GPUs fits, and a summary stays one small gossip message.
	MaxEndorsedAwardSize  = 5 << 10
	MaxEndorsedAcceptSize = 4 << 10
	MaxGPUsPerHost        = 64
	MessagesVersion       = 1
	MaxRFQLifetimeMs      = 10 * 60 * 1000
)

// Kinds of the auction records.
var (
	RFQKind = attest.Register(attest.Kind{
		Name: "rfq", Domain: "idlegrid-rfq", PayloadType: []byte("/idlegrid/rfq/1"),
		Versions: []uint{MessagesVersion}, MaxSize: MaxRFQSize,
	})
	// Bids and awards of version 2 carry lease terms (terms.go).
	BidKind = attest.Register(attest.Kind{
		Name: "bid", Domain: "idlegrid-bid", PayloadType: []byte("/idlegrid/bid/1"),
		Versions: []uint{MessagesVersion, TermsVersion}, MaxSize: MaxBidSize,
	})
	AwardKind = attest.Register(attest.Kind{
		Name: "award", Domain: "idlegrid-award", PayloadType: []byte("/idlegrid/award/1"),
		Versions: []uint{MessagesVersion, TermsVersion}, MaxSize: MaxAwardSize,
	})
	AcceptKind = attest.Register(attest.Kind{
		Name: "lease-acceptance", Domain: "idlegrid-lease-accept", PayloadType: []byte("/idlegrid/lease-accept/1"),
		Versions: []uint{MessagesVersion}, MaxSize: MaxAcceptSize,
	})
	DeclineKind = attest.Register(attest.Kind{
		Name: "decline", Domain: "idlegrid-decline", PayloadType: []byte("/idlegrid/decline/1"),
		Versions: []uint{MessagesVersion}, MaxSize: MaxDeclineSize,
	})
	PreemptKind = attest.Register(attest.Kind{
		Name: "preempt-notice", Domain: "idlegrid-preempt", PayloadType: []byte("/idlegrid/preempt/1"),
		Versions: []uint{MessagesVersion}, MaxSize: MaxPreemptSize,
	})
	SummaryKind = attest.Register(attest.Kind{
		Name: "award-summary", Domain: "idlegrid-award-summary", PayloadType: []byte("/idlegrid/award-summary/1"),
		Versions: []uint{MessagesVersion}, MaxSize: MaxSummarySize,
	})
)

// PricingRule is how winners are paid.
type PricingRule string

// Pricing rules.
const (
	// PayBid pays each winner its own bid (first-price).
	PayBid PricingRule = "first"
	// PaySecond pays every winner one clearing price: the asked price of
	// the best-ranked feasible loser, or the renter's maximum when no bid
	// lost (uniform second-price); never less than a winner's own bid.
	PaySecond PricingRule = "second"
)

// Resources is what one job needs.
type Resources struct {
	GPUs uint32 `cbor:"gpus"`
	// Models are acceptable GPU model slugs or families ("h100" matches
	// "h100-80gb" and "h100-nvl-94gb"); empty: any model.
	Models        []string `cbor:"models,omitempty"`
	MinVRAMMiB    uint64   `cbor:"min_vram_mib,omitempty"`
	MinComputeCap string   `cbor:"min_cc,omitempty"` // "major.minor"
	CPUCores      uint32   `cbor:"cpu_cores,omitempty"`
	RAMMiB        uint64   `cbor:"ram_mib,omitempty"`
	DiskGiB       uint64   `cbor:"disk_gib,omitempty"`
}

// RFQ is a renter's request for quotes, published on idlegrid/rfq/1.
type RFQ struct {
	V      uint   `cbor:"v"`
	Renter string `cbor:"renter"` // peer ID of the signer
	// JobCID is the CID of the canonical job spec.
	JobCID string `cbor:"job"`
	// Nonce (16 random bytes) makes every RFQ unique; receivers keep a
	// seen-cache of RFQ IDs until expiry, so a replay is ignored.
	Nonce       []byte    `cbor:"nonce"`
	IssuedAtMs  int64     `cbor:"issued_at_ms"`
	ExpiresAtMs int64     `cbor:"expires_at_ms"`
	Resources   Resources `cbor:"res"`
	Runtime     string    `cbor:"runtime"`          // RuntimeDocker or RuntimeWasm
	Image       string    `cbor:"image,omitempty"`  // docker: REF@sha256:<hex>
	Module      string    `cbor:"module,omitempty"` // wasm: module CID
	Tier        Tier      `cbor:"tier"`
	// MaxPriceMicro is the most the renter pays, uUSD per GPU-hour.
	MaxPriceMicro uint64 `cbor:"max_price"`
	// MinReliabilityPermille is the lowest acceptable reliability, 0..1000.
	MinReliabilityPermille uint32   `cbor:"min_rel,omitempty"`
	Regions                []string `cbor:"regions,omitempty"` // country codes; empty: anywhere
	// Near lists the regions of the work's users: bids from there are
	// preferred (Weights.NearBonus), others still compete.
	Near                []string    `cbor:"near,omitempty"`
	MaxRTTMs            uint32      `cbor:"max_rtt_ms,omitempty"`
	ExpectedDurationSec uint64      `cbor:"expected_s"`
	MaxDurationSec      uint64      `cbor:"max_s"`
	StartByMs           int64       `cbor:"start_by_ms,omitempty"`
	BidWindowMs         uint32      `cbor:"bid_window_ms"`
	Datasets            []string    `cbor:"datasets,omitempty"`
	Pricing             PricingRule `cbor:"pricing"`
	Egress              bool        `cbor:"egress,omitempty"`
	// MinNoticeSec is, for bronze, the shortest preemption notice the
	// renter accepts.
	MinNoticeSec uint32 `cbor:"min_notice_s,omitempty"`
	// Addrs are the renter's dialable multiaddrs (at most MaxRFQAddrs), so
	// a provider that got the RFQ through the mesh can send its bid
	// straight back without a DHT lookup (renters are DHT clients and hard
	// to find).
	Addrs []string `cbor:"addrs,omitempty"`
	// WantBids is how many bids the renter wants, 1..MaxWantBids; 0 (the
	// key absent on the wire, so RFQs without it keep their bytes) means
	// DefaultWantBids. Providers decide with SelectBidders whether to bid,
	// so that about this many do whatever the shard's size.
	WantBids uint32 `cbor:"want_bids,omitempty"`
	// Model is the model the job serves, from the spec's model and
	// model_size: providers that hold it start warm, the others are
	// charged its download (ColdStart). nil (the key absent, so RFQs
	// without it keep their bytes): no model named.
	Model *ModelRef `cbor:"model,omitempty"`
}

// MaxRFQAddrs bounds RFQ.Addrs.
const MaxRFQAddrs = 8

// DefaultWantBids and MaxWantBids bound RFQ.WantBids. 16 bids give the
// matcher a price and backups for a job of a few GPUs; 64, the GPUs one
// RFQ may ask for, lets a renter pool single-GPU hosts for the largest.
const (
	DefaultWantBids = 16
	MaxWantBids     = 64
)

// Bid is a provider's signed offer for one RFQ, sent straight to the
// renter over /idlegrid/bid/1.0.0.
type Bid struct {
	V        uint   `cbor:"v"`
	Provider string `cbor:"provider"` // peer ID of the signer
	RFQ      string `cbor:"rfq"`      // record ID (CID) of the RFQ
	JobCID   string `cbor:"job"`
	// PriceMicro is the asked price, uUSD per GPU-hour.
	PriceMicro uint64 `cbor:"price"`
	// GPUs are the UUIDs offered (held until ValidUntilMs). Fewer than
	// requested is a partial bid the matcher may pool with others.
	GPUs     []string `cbor:"gpus"`
	Model    string   `cbor:"model"` // model slug of the offered GPUs
	VRAMMiB  uint64   `cbor:"vram_mib"`
	Region   string   `cbor:"region"`
	Datasets []string `cbor:"datasets,omitempty"` // requested datasets held locally
	// EarliestStartMs is when the GPUs can start (after any preemption
	// notice the provider must give first).
	EarliestStartMs int64 `cbor:"earliest_start_ms"`
	IssuedAtMs      int64 `cbor:"issued_at_ms"`
	ValidUntilMs    int64 `cbor:"valid_until_ms"`
	// NoticeSec is the preemption notice promised (bronze only).
	NoticeSec uint32 `cbor:"notice_s,omitempty"`
	// Terms are the lease terms the provider offers (version 2 only);
	// absent, in a version 1 bid, they are DefaultLeaseTerms. Set them
	// with SetTerms, read them with LeaseTerms.
	Terms *LeaseTerms `cbor:"terms,omitempty"`
}

// Award is the renter's signed acceptance of (part of) a bid, sent to the
// provider over /idlegrid/lease/1.0.0. Its record ID is the lease ID.
type Award struct {
	V        uint     `cbor:"v"`
	Renter   string   `cbor:"renter"`
	Provider string   `cbor:"provider"`
	RFQ      string   `cbor:"rfq"`
	Bid      string   `cbor:"bid"` // record ID of the winning bid
	JobCID   string   `cbor:"job"`
	GPUs     []string `cbor:"gpus"` // subset of the bid's GPUs
	// PriceMicro is what the renter pays, uUSD per GPU-hour (the bid for
	// first-price, the clearing price for second-price).
	PriceMicro     uint64 `cbor:"price"`
	Tier           Tier   `cbor:"tier"`
	MaxDurationSec uint64 `cbor:"max_s"`
	NoticeSec      uint32 `cbor:"notice_s,omitempty"`
	// Part and Parts number the awards of one micro-pool (1-based).
	Part        uint32 `cbor:"part"`
	Parts       uint32 `cbor:"parts"`
	Nonce       []byte `cbor:"nonce"`
	IssuedAtMs  int64  `cbor:"issued_at_ms"`
	ExpiresAtMs int64  `cbor:"expires_at_ms"` // the provider must countersign before
	// Terms are the lease terms the renter accepts: the winning bid's,
	// exactly (version 2 only; absent, in a version 1 award, they are
	// DefaultLeaseTerms).
	Terms *LeaseTerms `cbor:"terms,omitempty"`
}

// LeaseAcceptance is the provider's countersignature of an award. The
// award and its acceptance together are the lease.
type LeaseAcceptance struct {
	V          uint     `cbor:"v"`
	Provider   string   `cbor:"provider"`
	Award      string   `cbor:"award"` // record ID of the award (the lease ID)
	GPUs       []string `cbor:"gpus"`
	AcceptedMs int64    `cbor:"accepted_ms"`
	// StartsAtMs is when the lease's work starts: AcceptedMs, or later
	// when the provider first owes a bronze lease its preemption notice.
	StartsAtMs int64 `cbor:"starts_at_ms"`
}

// Decline is a provider's signed refusal of an award.
type Decline struct {
	V        uint   `cbor:"v"`
	Provider string `cbor:"provider"`
	Award    string `cbor:"award"`
	Reason   string `cbor:"reason"`
	AtMs     int64  `cbor:"at_ms"`
}

// PreemptNotice tells a bronze renter that its lease ends at EffectiveAtMs
// (at least the notice promised in the bid after IssuedAtMs).
type PreemptNotice struct {
	V             uint   `cbor:"v"`
	Provider      string `cbor:"provider"`
	Lease         string `cbor:"lease"` // award record ID
	NoticeSec     uint32 `cbor:"notice_s"`
	IssuedAtMs    int64  `cbor:"issued_at_ms"`
	EffectiveAtMs int64  `cbor:"effective_at_ms"`
	Reason        string `cbor:"reason"`
}

// AwardSummary is a signed statement of a cleared price, gossiped on
// idlegrid/attest/1 for the market price index. It carries the lease it
// reports, both halves: the renter's award (which names the price) and the
// provider's acceptance of it, so a summary shows that the award happened
// and no single key can make one up (OpenAwardSummary checks them).
type AwardSummary struct {
	V        uint   `cbor:"v"`
	Renter   string `cbor:"renter"`
	Provider string `cbor:"provider"`
	Award    string `cbor:"award"` // record ID, for de-duplication
	// RFQ is the auction this award closed: providers release the GPUs
	// their losing bids for it still hold.
	RFQ        string `cbor:"rfq"`
	Model      string `cbor:"model"`
	Tier       Tier   `cbor:"tier"`
	GPUs       uint32 `cbor:"gpus"`
	PriceMicro uint64 `cbor:"price"`
	AtMs       int64  `cbor:"at_ms"`
	// AwardEnv is the sealed award (its record ID is Award) and AcceptEnv
	// the provider's sealed LeaseAcceptance of it.
	AwardEnv  []byte `cbor:"award_env"`
	AcceptEnv []byte `cbor:"accept_env"`
	// Bidders are the providers whose bids the renter received for the
	// RFQ (Bidders), its word that they answer RFQs: providers cannot see
	// each other's bids, and a node counts this word as evidence only
	// from a renter with receipts (docs/protocol.md §6.5).
	Bidders []string `cbor:"bidders,omitempty"`
}

// MaxSummaryBidders bounds the bidders one summary lists.
const MaxSummaryBidders = 64

// RecordKind implements attest.Payload.
func (RFQ) RecordKind() *attest.Kind { return RFQKind }

// RecordKind implements attest.Payload.
func (Bid) RecordKind() *attest.Kind { return BidKind }

// RecordKind implements attest.Payload.
func (Award) RecordKind() *attest.Kind { return AwardKind }

// RecordKind implements attest.Payload.
func (LeaseAcceptance) RecordKind() *attest.Kind { return AcceptKind }

// RecordKind implements attest.Payload.
func (Decline) RecordKind() *attest.Kind { return DeclineKind }

// RecordKind implements attest.Payload.
func (PreemptNotice) RecordKind() *attest.Kind { return PreemptKind }

// RecordKind implements attest.Payload.
func (AwardSummary) RecordKind() *attest.Kind { return SummaryKind }
