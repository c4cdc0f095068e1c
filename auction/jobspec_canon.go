package auction

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// Validate checks the whole spec and reports every problem with its field
// name (and YAML line, for a parsed spec), wrapped in ErrInvalidJobSpec.
func (s *JobSpec) Validate() error {
	sp := newSpecProblems(s)
	s.resolve(sp)
	if err := sp.err(); err != nil {
		return fmt.Errorf("auction.JobSpec.Validate: %w", err)
	}
	return nil
}

// CID names the spec: the CIDv1 (dag-cbor codec, sha2-256) of the
// canonical CBOR of the normalized spec (defaults filled in, sizes, prices
// and durations as integers, names lower-cased, lists sorted), so two
// spellings of one job ("40GiB" and "40960MiB", "2h" and "120m") have one
// CID. RFQs carry it; a provider recomputes it from the spec it is sent.
func (s *JobSpec) CID() (cid.Cid, error) {
	c, err := s.canonical()
	if err != nil {
		return cid.Undef, fmt.Errorf("auction.JobSpec.CID: %w", err)
	}
	id, err := c.cid()
	if err != nil {
		return cid.Undef, fmt.Errorf("auction.JobSpec.CID: %w", err)
	}
	return id, nil
}

// RFQ builds the request for quotes for this spec, issued at now by renter
// with the given 16-byte random nonce. It expires RFQExpiryMargin after
// the bid window closes. A relative start_by counts from now; an absolute
// one must lie after now.
func (s *JobSpec) RFQ(renter peer.ID, nonce []byte, now time.Time) (*RFQ, error) {
	c, err := s.canonical()
	if err != nil {
		return nil, fmt.Errorf("auction.JobSpec.RFQ: %w", err)
	}
	id, err := c.cid()
	if err != nil {
		return nil, fmt.Errorf("auction.JobSpec.RFQ: %w", err)
	}
	if err := renter.Validate(); err != nil {
		return nil, fmt.Errorf("auction.JobSpec.RFQ: renter: %w", err)
	}
	if len(nonce) != NonceLen {
		return nil, fmt.Errorf("auction.JobSpec.RFQ: nonce is %d bytes, want %d", len(nonce), NonceLen)
	}
	nowMs := now.UnixMilli()
	startBy := c.StartByMs
	switch {
	case c.StartWithinSec > 0:
		startBy = nowMs + int64(c.StartWithinSec)*1000
	case startBy != 0 && startBy <= nowMs:
		return nil, fmt.Errorf("auction.JobSpec.RFQ: start_by %s is not after now (%s)",
			time.UnixMilli(startBy).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	r := &RFQ{
		V:                      MessagesVersion,
		Renter:                 renter.String(),
		JobCID:                 id.String(),
		Nonce:                  slices.Clone(nonce),
		IssuedAtMs:             nowMs,
		ExpiresAtMs:            nowMs + int64(c.BidWindowMs) + RFQExpiryMargin.Milliseconds(),
		Resources:              c.Resources,
		Runtime:                c.Runtime,
		Image:                  c.Image,
		Module:                 c.Module,
		Tier:                   c.Tier,
		MaxPriceMicro:          c.MaxPriceMicro,
		MinReliabilityPermille: c.MinReliabilityPermille,
		Regions:                c.Regions,
		Near:                   c.Near,
		MaxRTTMs:               c.MaxRTTMs,
		ExpectedDurationSec:    c.ExpectedDurationSec,
		MaxDurationSec:         c.MaxDurationSec,
		StartByMs:              startBy,
		BidWindowMs:            c.BidWindowMs,
		Datasets:               c.Datasets,
		Pricing:                c.Pricing,
		Egress:                 c.Egress,
		MinNoticeSec:           c.MinNoticeSec,
		Model:                  c.Model,
	}
	if err := r.Validate(); err != nil {
		// The spec validated, so this is a gap between the two rule sets.
		return nil, fmt.Errorf("auction.JobSpec.RFQ: built an invalid RFQ: %w", err)
	}
	return r, nil
}

func (s *JobSpec) canonical() (*jobSpecCanon, error) {
	sp := newSpecProblems(s)
	c := s.resolve(sp)
	if err := sp.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// jobSpecCanon is the normalized spec whose canonical CBOR the job CID
// hashes. Its encoding is protocol: changing it needs a new JobSpecVersion.
type jobSpecCanon struct {
	V                      uint              `cbor:"v"`
	Name                   string            `cbor:"name,omitempty"`
	Runtime                string            `cbor:"runtime"`
	Image                  string            `cbor:"image,omitempty"`
	Module                 string            `cbor:"module,omitempty"`
	Command                []string          `cbor:"command,omitempty"`
	Env                    map[string]string `cbor:"env,omitempty"`
	Resources              Resources         `cbor:"res"`
	Tier                   Tier              `cbor:"tier"`
	MaxPriceMicro          uint64            `cbor:"max_price"`
	MinReliabilityPermille uint32            `cbor:"min_rel,omitempty"`
	Regions                []string          `cbor:"regions,omitempty"`
	Near                   []string          `cbor:"near,omitempty"` // absent: the CIDs of specs without it are unchanged
	MaxRTTMs               uint32            `cbor:"max_rtt_ms,omitempty"`
	ExpectedDurationSec    uint64            `cbor:"expected_s"`
	MaxDurationSec         uint64            `cbor:"max_s"`
	StartByMs              int64             `cbor:"start_by_ms,omitempty"`    // absolute start_by
	StartWithinSec         uint64            `cbor:"start_within_s,omitempty"` // relative start_by
	BidWindowMs            uint32            `cbor:"bid_window_ms"`
	Datasets               []string          `cbor:"datasets,omitempty"`
	Pricing                PricingRule       `cbor:"pricing"`
	Egress                 bool              `cbor:"egress,omitempty"`
	MinNoticeSec           uint32            `cbor:"min_notice_s,omitempty"`
	// Service is nil for batch jobs, so their CIDs are unchanged.
	Service *Service `cbor:"service,omitempty"`
	// Model is nil for a spec that names none, so its CID is unchanged.
	Model *ModelRef `cbor:"model,omitempty"`
}

func (c *jobSpecCanon) cid() (cid.Cid, error) {
	b, err := attest.Marshal(c)
	if err != nil {
		return cid.Undef, err
	}
	sum, err := mh.Sum(b, mh.SHA2_256, -1)
	if err != nil {
		return cid.Undef, err
	}
	return cid.NewCidV1(cid.DagCBOR, sum), nil
}

// specProblems collects problems with the YAML line of each field, and
// skips fields whose value already failed to parse, so one mistake is
// reported once.
type specProblems struct {
	problems
	lines map[string]int
	skip  map[string]bool
}

func newSpecProblems(s *JobSpec) *specProblems {
	return &specProblems{lines: s.lines, skip: map[string]bool{}}
}

// add reports a problem with field (which may carry an index, "gpu[1]").
func (sp *specProblems) add(field, format string, args ...any) {
	base, _, _ := strings.Cut(field, "[")
	if sp.skip[base] {
		return
	}
	path := field
	if l := sp.lines[base]; l > 0 {
		path = fmt.Sprintf("line %d: %s", l, field)
	}
	sp.Addf(path, format, args...)
}

// err lists the problems in file order (those without a line, such as a
// missing field, last), so they read top to bottom against the YAML.
func (sp *specProblems) err() error {
	list := sp.List()
	if len(list) == 0 {
		return nil
	}
	line := func(s string) int {
		rest, ok := strings.CutPrefix(s, "line ")
		if !ok {
			return math.MaxInt
		}
		num, _, _ := strings.Cut(rest, ":")
		n, err := strconv.Atoi(num)
		if err != nil {
			return math.MaxInt
		}
		return n
	}
	slices.SortStableFunc(list, func(a, b string) int { return line(a) - line(b) })
	return fmt.Errorf("%w: %s", ErrInvalidJobSpec, strings.Join(list, "; "))
}

// Workload is what a provider needs to run a job: the resolved fields of
// its spec (the RFQ carries only what bidding needs).
type Workload struct {
	Runtime        string
	Image          string // docker: REF@sha256:<hex>
	Module         string // wasm: module CID
	Command        []string
	Env            map[string]string
	Resources      Resources
	MaxDurationSec uint64
	Egress         bool
	// Service is set for kind: service jobs.
	Service *Service
}

// Workload resolves the spec into what runs. It fails like Validate.
func (s *JobSpec) Workload() (*Workload, error) {
	c, err := s.canonical()
	if err != nil {
		return nil, fmt.Errorf("auction.JobSpec.Workload: %w", err)
	}
	return &Workload{
		Runtime: c.Runtime, Image: c.Image, Module: c.Module, Command: c.Command, Env: c.Env,
		Resources: c.Resources, MaxDurationSec: c.MaxDurationSec, Egress: c.Egress, Service: c.Service,
	}, nil
}
