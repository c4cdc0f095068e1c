package auction

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	ma "github.com/multiformats/go-multiaddr"
)

// ErrInvalidMessage: an auction message decodes but breaks a structural
// rule. The wrapping text names the kind and every offending field.
var ErrInvalidMessage = errors.New("invalid auction message")

// Structural limits of auction messages beyond those in messages.go. They
// keep every message well inside its kind's size limit and bound the work
// a peer can cause.
const (
	NonceLen = 16 // bytes of RFQ and Award nonces
	// MaxRFQModels, MaxRFQRegions and MaxRFQDatasets keep a full RFQ under
	// MaxRFQSize ("a few dozen" of each).
	MaxRFQModels   = 32
	MaxRFQRegions  = 32
	MaxRFQDatasets = 32
	// MinBidWindowMs and MaxBidWindowMs bound the auction: below 50 ms no
	// provider across a continent can answer; above 60 s the GPUs a bid
	// holds sit idle for too long.
	MinBidWindowMs = 50
	MaxBidWindowMs = 60_000
	// MaxBidLifetimeMs and MaxAwardLifetimeMs bound how long a bid holds
	// GPUs and how long an award waits for its countersignature; like the
	// RFQ lifetime they also bound how long replay caches keep IDs.
	MaxBidLifetimeMs   = MaxRFQLifetimeMs
	MaxAwardLifetimeMs = MaxRFQLifetimeMs
	// MaxJobDuration bounds expected and maximum durations. It keeps the
	// integer arithmetic on durations far from overflow; reservations
	// longer than a year are contracts, not auctions.
	MaxJobDuration  = 366 * 24 * time.Hour
	MaxReasonLen    = 256 // decline and preemption reasons
	maxImageRefLen  = 255 // Docker's limit on a reference
	maxAddrLen      = 256 // a multiaddr with a webtransport certhash is ~200
	maxRFQPermille  = 1000
	imageDigestHexN = 64
)

// Validate checks the RFQ's structure without a clock. It reports every
// problem, each prefixed with its field path, wrapped in ErrInvalidMessage.
func (r *RFQ) Validate() error {
	var p problems
	msgCheckVersion(&p, r.V)
	attest.CheckPeerID(&p, "renter", r.Renter)
	attest.CheckContentID(&p, "job", r.JobCID)
	msgCheckNonce(&p, "nonce", r.Nonce)
	msgCheckLifetime(&p, r.IssuedAtMs, r.ExpiresAtMs, "expires_at_ms", MaxRFQLifetimeMs)
	r.validateResources(&p)
	msgCheckWorkload(&p, r.Runtime, r.Image, r.Module)
	msgCheckTier(&p, "tier", r.Tier)
	msgCheckPrice(&p, "max_price", r.MaxPriceMicro)
	if r.MinReliabilityPermille > maxRFQPermille {
		p.Addf("min_rel", "%d permille exceeds 1000", r.MinReliabilityPermille)
	}
	msgCheckList(&p, "regions", r.Regions, MaxRFQRegions, IsCountryCode, "is not a lower-case ISO 3166-1 alpha-2 code")
	msgCheckList(&p, "near", r.Near, MaxRFQRegions, IsCountryCode, "is not a lower-case ISO 3166-1 alpha-2 code")
	msgCheckDurations(&p, r.ExpectedDurationSec, r.MaxDurationSec)
	if r.StartByMs != 0 && r.StartByMs < r.IssuedAtMs {
		p.Addf("start_by_ms", "%d is before issued_at_ms %d", r.StartByMs, r.IssuedAtMs)
	}
	switch {
	case r.BidWindowMs < MinBidWindowMs || r.BidWindowMs > MaxBidWindowMs:
		p.Addf("bid_window_ms", "%d out of range %d..%d", r.BidWindowMs, MinBidWindowMs, MaxBidWindowMs)
	case r.IssuedAtMs > 0 && r.ExpiresAtMs-r.IssuedAtMs < int64(r.BidWindowMs):
		// Providers drop an expired RFQ, so a window longer than the RFQ's
		// life would wait for bids nobody may send.
		p.Addf("bid_window_ms", "%d ms outlasts the RFQ (expires %d ms after issue)", r.BidWindowMs, r.ExpiresAtMs-r.IssuedAtMs)
	}
	msgCheckList(&p, "datasets", r.Datasets, MaxRFQDatasets, validDatasetCID, "is not a CID with a hash of at most 80 bytes")
	msgCheckPricing(&p, "pricing", r.Pricing)
	if r.MinNoticeSec != 0 && r.Tier != TierBronze {
		p.Addf("min_notice_s", "set on tier %q; preemption notice applies only to bronze", r.Tier)
	}
	msgCheckList(&p, "addrs", r.Addrs, MaxRFQAddrs, func(s string) bool {
		_, err := ma.NewMultiaddr(s)
		return err == nil && len(s) <= maxAddrLen
	}, fmt.Sprintf("is not a multiaddr of at most %d bytes", maxAddrLen))
	if r.WantBids > MaxWantBids {
		p.Addf("want_bids", "%d exceeds %d", r.WantBids, MaxWantBids)
	}
	r.Model.validate(&p, "model")
	return messageErr(&p, RFQKind.Name)
}

func (r *RFQ) validateResources(p *problems) {
	res := r.Resources
	switch {
	case res.GPUs > MaxGPUsPerHost:
		p.Addf("res.gpus", "%d exceeds %d", res.GPUs, MaxGPUsPerHost)
	case res.GPUs == 0:
		// A CPU-only job (wasm or docker) cannot ask for properties of
		// GPUs.
		if len(res.Models) > 0 || res.MinVRAMMiB > 0 || res.MinComputeCap != "" {
			p.Addf("res", "models, min_vram_mib and min_cc need gpus >= 1")
		}
	}
	msgCheckList(p, "res.models", res.Models, MaxRFQModels, IsModelSlug,
		"is not a model slug or family (lower-case letters and digits joined by '-', e.g. h100 or h100-80gb)")
	if res.MinVRAMMiB > maxVRAMMiB {
		p.Addf("res.min_vram_mib", "%d exceeds %d", res.MinVRAMMiB, maxVRAMMiB)
	}
	if res.MinComputeCap != "" {
		if _, _, err := ParseComputeCap(res.MinComputeCap); err != nil {
			p.Addf("res.min_cc", "%v", err)
		}
	}
	if res.CPUCores > maxCPUCores {
		p.Addf("res.cpu_cores", "%d exceeds %d", res.CPUCores, maxCPUCores)
	}
	if res.RAMMiB > maxRAMMiB {
		p.Addf("res.ram_mib", "%d exceeds %d", res.RAMMiB, maxRAMMiB)
	}
	if res.DiskGiB > maxDiskGiB {
		p.Addf("res.disk_gib", "%d exceeds %d", res.DiskGiB, maxDiskGiB)
	}
}

// Validate checks the bid's structure without a clock.
func (b *Bid) Validate() error {
	var p problems
	checkTermsField(&p, b.V, b.Terms)
	attest.CheckPeerID(&p, "provider", b.Provider)
	attest.CheckRecordID(&p, "rfq", b.RFQ)
	attest.CheckContentID(&p, "job", b.JobCID)
	msgCheckPrice(&p, "price", b.PriceMicro)
	if len(b.GPUs) == 0 {
		// A CPU-only bid (for a gpus: 0 RFQ) offers cores, not GPUs.
		if b.Model != CPUModel || b.VRAMMiB != 0 {
			p.Addf("gpus", "empty: only a CPU-only bid (model %q, no vram_mib) offers no GPU", CPUModel)
		}
	} else {
		msgCheckGPUUUIDs(&p, "gpus", b.GPUs)
		if !IsModelSlug(b.Model) {
			p.Addf("model", "%q is not a model slug", b.Model)
		}
		if b.VRAMMiB == 0 || b.VRAMMiB > maxVRAMMiB {
			p.Addf("vram_mib", "%d out of range 1..%d", b.VRAMMiB, maxVRAMMiB)
		}
	}
	if !IsCountryCode(b.Region) {
		p.Addf("region", "%q is not a lower-case ISO 3166-1 alpha-2 code", b.Region)
	}
	msgCheckList(&p, "datasets", b.Datasets, MaxRFQDatasets, validDatasetCID, "is not a CID with a hash of at most 80 bytes")
	msgCheckLifetime(&p, b.IssuedAtMs, b.ValidUntilMs, "valid_until_ms", MaxBidLifetimeMs)
	if b.EarliestStartMs < b.IssuedAtMs {
		p.Addf("earliest_start_ms", "%d is before issued_at_ms %d", b.EarliestStartMs, b.IssuedAtMs)
	}
	return messageErr(&p, BidKind.Name)
}

// Validate checks the award's structure without a clock.
func (a *Award) Validate() error {
	var p problems
	checkTermsField(&p, a.V, a.Terms)
	attest.CheckPeerID(&p, "renter", a.Renter)
	attest.CheckPeerID(&p, "provider", a.Provider)
	attest.CheckRecordID(&p, "rfq", a.RFQ)
	attest.CheckRecordID(&p, "bid", a.Bid)
	attest.CheckContentID(&p, "job", a.JobCID)
	msgCheckGPUUUIDsOrNone(&p, "gpus", a.GPUs) // none: CPU-only work
	msgCheckPrice(&p, "price", a.PriceMicro)
	msgCheckTier(&p, "tier", a.Tier)
	switch {
	case a.MaxDurationSec == 0:
		p.Addf("max_s", "must be at least 1")
	case a.MaxDurationSec > uint64(MaxJobDuration/time.Second):
		p.Addf("max_s", "%d exceeds %d", a.MaxDurationSec, uint64(MaxJobDuration/time.Second))
	}
	if a.NoticeSec != 0 && a.Tier != TierBronze {
		p.Addf("notice_s", "set on tier %q; preemption notice applies only to bronze", a.Tier)
	}
	// Every part of a micro-pool holds at least one GPU, so a pool has at
	// most as many parts as an RFQ may ask GPUs.
	switch {
	case a.Parts == 0 || a.Parts > MaxGPUsPerHost:
		p.Addf("parts", "%d out of range 1..%d", a.Parts, MaxGPUsPerHost)
	case a.Part == 0 || a.Part > a.Parts:
		p.Addf("part", "%d out of range 1..%d (parts)", a.Part, a.Parts)
	}
	msgCheckNonce(&p, "nonce", a.Nonce)
	msgCheckLifetime(&p, a.IssuedAtMs, a.ExpiresAtMs, "expires_at_ms", MaxAwardLifetimeMs)
	return messageErr(&p, AwardKind.Name)
}

// Validate checks the acceptance's structure without a clock.
func (l *LeaseAcceptance) Validate() error {
	var p problems
	msgCheckVersion(&p, l.V)
	attest.CheckPeerID(&p, "provider", l.Provider)
	attest.CheckRecordID(&p, "award", l.Award)
	msgCheckGPUUUIDsOrNone(&p, "gpus", l.GPUs) // none: CPU-only work
	if l.AcceptedMs <= 0 {
		p.Addf("accepted_ms", "must be positive Unix milliseconds")
	}
	if l.StartsAtMs < l.AcceptedMs {
		p.Addf("starts_at_ms", "must not be before accepted_ms")
	}
	return messageErr(&p, AcceptKind.Name)
}

// Validate checks the decline's structure without a clock.
func (d *Decline) Validate() error {
	var p problems
	msgCheckVersion(&p, d.V)
	attest.CheckPeerID(&p, "provider", d.Provider)
	attest.CheckRecordID(&p, "award", d.Award)
	msgCheckReason(&p, d.Reason)
	if d.AtMs <= 0 {
		p.Addf("at_ms", "must be positive Unix milliseconds")
	}
	return messageErr(&p, DeclineKind.Name)
}

// Validate checks the notice's structure without a clock, including that
// it gives at least the notice it names: a provider cannot sign a notice
// that breaks its own promise.
func (n *PreemptNotice) Validate() error {
	var p problems
	msgCheckVersion(&p, n.V)
	attest.CheckPeerID(&p, "provider", n.Provider)
	attest.CheckRecordID(&p, "lease", n.Lease)
	switch {
	case n.IssuedAtMs <= 0:
		p.Addf("issued_at_ms", "must be positive Unix milliseconds")
	case n.EffectiveAtMs < n.IssuedAtMs:
		p.Addf("effective_at_ms", "must not be before issued_at_ms")
	case n.EffectiveAtMs-n.IssuedAtMs < int64(n.NoticeSec)*1000:
		p.Addf("effective_at_ms", "gives %s notice, less than notice_s %d",
			time.Duration(n.EffectiveAtMs-n.IssuedAtMs)*time.Millisecond, n.NoticeSec)
	}
	msgCheckReason(&p, n.Reason)
	return messageErr(&p, PreemptKind.Name)
}

// Validate checks the summary's structure without a clock.
func (s *AwardSummary) Validate() error {
	var p problems
	msgCheckVersion(&p, s.V)
	attest.CheckPeerID(&p, "renter", s.Renter)
	attest.CheckPeerID(&p, "provider", s.Provider)
	if s.Provider == s.Renter {
		p.Addf("provider", "is the renter")
	}
	attest.CheckRecordID(&p, "award", s.Award)
	attest.CheckRecordID(&p, "rfq", s.RFQ)
	if !IsModelSlug(s.Model) {
		p.Addf("model", "%q is not a model slug", s.Model)
	}
	msgCheckTier(&p, "tier", s.Tier)
	if s.GPUs == 0 || s.GPUs > MaxGPUsPerHost {
		p.Addf("gpus", "%d out of range 1..%d", s.GPUs, MaxGPUsPerHost)
	}
	msgCheckPrice(&p, "price", s.PriceMicro)
	if s.AtMs <= 0 {
		p.Addf("at_ms", "must be positive Unix milliseconds")
	}
	if n := len(s.AwardEnv); n == 0 || n > MaxEndorsedAwardSize {
		p.Addf("award_env", "%d bytes, want 1..%d", n, MaxEndorsedAwardSize)
	}
	if n := len(s.AcceptEnv); n == 0 || n > MaxEndorsedAcceptSize {
		p.Addf("accept_env", "%d bytes, want 1..%d", n, MaxEndorsedAcceptSize)
	}
	if len(s.Bidders) > MaxSummaryBidders {
		p.Addf("bidders", "%d, at most %d", len(s.Bidders), MaxSummaryBidders)
	}
	for i, b := range s.Bidders {
		attest.CheckPeerID(&p, fmt.Sprintf("bidders[%d]", i), b)
		if i > 0 && b <= s.Bidders[i-1] {
			p.Addf("bidders", "not sorted and unique at %d", i)
		}
	}
	return messageErr(&p, SummaryKind.Name)
}

func msgCheckVersion(p *problems, v uint) {
	if v != MessagesVersion {
		p.Addf("v", "version %d, want %d", v, MessagesVersion)
	}
}

func msgCheckNonce(p *problems, path string, n []byte) {
	if len(n) != NonceLen {
		p.Addf(path, "%d bytes, want %d", len(n), NonceLen)
	}
}

func msgCheckLifetime(p *problems, issued, expires int64, expPath string, maxMs int64) {
	switch {
	case issued <= 0:
		p.Addf("issued_at_ms", "must be positive Unix milliseconds")
	case expires <= issued:
		p.Addf(expPath, "must be after issued_at_ms")
	case expires-issued > maxMs:
		p.Addf(expPath, "lifetime %s exceeds %s",
			time.Duration(expires-issued)*time.Millisecond, time.Duration(maxMs)*time.Millisecond)
	}
}

func msgCheckTier(p *problems, path string, t Tier) {
	if !slices.Contains(Tiers, t) {
		p.Addf(path, "%q is not gold, silver or bronze", t)
	}
}

func msgCheckPricing(p *problems, path string, r PricingRule) {
	if r != PayBid && r != PaySecond {
		p.Addf(path, "%q is not first or second", r)
	}
}

func msgCheckPrice(p *problems, path string, uusd uint64) {
	if uusd == 0 || uusd > MaxPriceUUSD {
		p.Addf(path, "%d uUSD out of range 1..%d", uusd, uint64(MaxPriceUUSD))
	}
}

func msgCheckDurations(p *problems, expected, maxSec uint64) {
	limit := uint64(MaxJobDuration / time.Second)
	switch {
	case expected == 0:
		p.Addf("expected_s", "must be at least 1")
	case expected > limit:
		p.Addf("expected_s", "%d exceeds %d", expected, limit)
	}
	switch {
	case maxSec < expected:
		p.Addf("max_s", "%d is less than expected_s %d", maxSec, expected)
	case maxSec > limit:
		p.Addf("max_s", "%d exceeds %d", maxSec, limit)
	}
}

// checkWorkload checks that the runtime is known and names exactly the
// artefact it runs: a digest-pinned image for docker, a module CID for wasm.
func msgCheckWorkload(p *problems, runtime, image, module string) {
	switch runtime {
	case RuntimeDocker:
		if err := checkImageDigestRef(image); err != nil {
			p.Addf("image", "%v", err)
		}
		if module != "" {
			p.Addf("module", "must be empty for the docker runtime")
		}
	case RuntimeWasm:
		attest.CheckContentID(p, "module", module)
		if image != "" {
			p.Addf("image", "must be empty for the wasm runtime")
		}
	default:
		p.Addf("runtime", "%q is not a known runtime (docker, wasm)", runtime)
	}
}

// checkImageDigestRef accepts REF@sha256:<64 lower-case hex>. Tags can be moved
// to other content, so only a digest makes a job reproducible and lets a
// provider's allowed-images policy (which matches digests) mean anything.
func checkImageDigestRef(s string) error {
	if s == "" {
		return errors.New("missing image (docker needs REF@sha256:<64 hex>)")
	}
	if len(s) > maxImageRefLen {
		return fmt.Errorf("image reference is %d bytes, at most %d", len(s), maxImageRefLen)
	}
	ref, digest, ok := strings.Cut(s, "@")
	if !ok {
		return fmt.Errorf("image %q is not pinned by digest: write it as %s@sha256:<64 hex> "+
			"(a tag can move to other content, so reproducibility and providers' allowed-image policies match digests)", s, s)
	}
	if !msgValidRepoRef(ref) {
		return fmt.Errorf("image %q: repository %q is not a lower-case image reference", s, ref)
	}
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return fmt.Errorf("image %q: digest %q must start with \"sha256:\" (and be 64 hex digits)", s, digest)
	}
	if len(hex) != imageDigestHexN || !attest.IsLowerHex(hex) {
		return fmt.Errorf("image %q: digest must be sha256: and %d lower-case hex digits, got %d characters", s, imageDigestHexN, len(hex))
	}
	return nil
}

// validRepoRef is a loose check of the name[:tag] part: Docker's grammar
// is richer, but these characters are all it allows.
func msgValidRepoRef(s string) bool {
	if s == "" || s[0] == '/' || s[len(s)-1] == '/' || s[len(s)-1] == ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || strings.IndexByte("./_-:", b) >= 0 ||
			b >= 'A' && b <= 'Z' && strings.LastIndexByte(s[:i], ':') > strings.LastIndexByte(s[:i], '/')) {
			return false
		}
	}
	return true
}

func msgCheckGPUUUIDs(p *problems, path string, ids []string) {
	if len(ids) == 0 || len(ids) > MaxGPUsPerHost {
		p.Addf(path, "%d entries, want 1..%d", len(ids), MaxGPUsPerHost)
		return
	}
	validateSet(p, path, ids, func(s string) bool { return s != "" && attest.Printable(s, MaxTextLen) },
		fmt.Sprintf("is not a GPU UUID (1..%d printable ASCII characters)", MaxTextLen))
}

// msgCheckGPUUUIDsOrNone is msgCheckGPUUUIDs that also accepts no GPU:
// the award and acceptance of CPU-only work name none.
func msgCheckGPUUUIDsOrNone(p *problems, path string, ids []string) {
	if len(ids) > 0 {
		msgCheckGPUUUIDs(p, path, ids)
	}
}

func msgCheckList(p *problems, path string, xs []string, maxN int, ok func(string) bool, what string) {
	if len(xs) > maxN {
		p.Addf(path, "%d entries, at most %d", len(xs), maxN)
		return
	}
	validateSet(p, path, xs, ok, what)
}

func msgCheckReason(p *problems, s string) {
	if s == "" || !attest.Printable(s, MaxReasonLen) {
		p.Addf("reason", "must be 1..%d printable ASCII characters", MaxReasonLen)
	}
}

// messageErr turns collected problems into one error naming the kind.
func messageErr(p *problems, kind string) error { return p.Err(ErrInvalidMessage, kind) }
