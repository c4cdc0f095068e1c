package auction

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
	"go.yaml.in/yaml/v3"
)

// Job spec limits and defaults (docs/jobspec.md is the user reference).
const (
	// MaxJobSpecSize bounds a job spec file; real specs are a few hundred
	// bytes, and the bound caps the YAML parser's work.
	MaxJobSpecSize = 64 << 10
	// JobSpecVersion is the "v" of the canonical encoding the job CID
	// hashes; it changes whenever that encoding does.
	JobSpecVersion   = 1
	DefaultBidWindow = 500 * time.Millisecond
	// RFQExpiryMargin is how long an RFQ outlives its bid window: providers
	// compare its expiry with their own clocks and gossip takes time, so an
	// RFQ that expired exactly with the window would be dropped by any
	// provider whose clock runs a little ahead.
	RFQExpiryMargin = 10 * time.Second
	maxCommandArgs  = 256
	maxEnvVars      = 256
	maxArgLen       = 4096
	maxEnvNameLen   = 256
	maxRTT          = time.Minute
)

// ErrInvalidJobSpec: a job spec does not parse or breaks a rule. The
// wrapping text lists every problem with its field (and YAML line).
var ErrInvalidJobSpec = errors.New("invalid job spec")

// JobSpec is what a renter wants run: the YAML file of `idlegrid job
// submit -f`, or the same fields given as flags (see Set). Sizes and
// durations stay strings as written ("40GiB", "2h") so that a spec prints
// back the way its author wrote it; Validate, CID and RFQ interpret them.
// Zero values mean "default" (see docs/jobspec.md for each default).
type JobSpec struct {
	Name    string            `yaml:"name,omitempty"`
	Runtime string            `yaml:"runtime,omitempty"` // docker or wasm; inferred from image/module
	Image   string            `yaml:"image,omitempty"`   // docker: REF@sha256:<64 hex>
	Module  string            `yaml:"module,omitempty"`  // wasm: module CID
	Command []string          `yaml:"command,omitempty"` // argv; never split by a shell
	Env     map[string]string `yaml:"env,omitempty"`
	// GPUs is the GPU count; nil means 1 for docker and 0 for wasm (a
	// pointer, because an explicit 0 on docker is an error, not a default).
	GPUs           *int     `yaml:"gpus,omitempty"`
	GPU            []string `yaml:"gpu,omitempty"`  // model slugs or families, any of them
	VRAM           string   `yaml:"vram,omitempty"` // per GPU; bare number = GB
	CC             string   `yaml:"cc,omitempty"`   // minimum compute capability
	CPU            int      `yaml:"cpu,omitempty"`  // cores
	RAM            string   `yaml:"ram,omitempty"`
	Disk           string   `yaml:"disk,omitempty"`
	Tier           string   `yaml:"tier,omitempty"`
	MaxPrice       float64  `yaml:"max_price,omitempty"`       // USD per GPU-hour
	MinReliability float64  `yaml:"min_reliability,omitempty"` // 0..1
	Region         []string `yaml:"region,omitempty"`          // country codes
	MaxRTT         string   `yaml:"max_rtt,omitempty"`
	Duration       string   `yaml:"duration,omitempty"` // expected run time
	MaxDuration    string   `yaml:"max_duration,omitempty"`
	StartBy        string   `yaml:"start_by,omitempty"` // RFC 3339 time or duration from submission
	BidWindow      string   `yaml:"bid_window,omitempty"`
	Datasets       []string `yaml:"datasets,omitempty"` // CIDs
	Pricing        string   `yaml:"pricing,omitempty"`  // first or second
	Egress         bool     `yaml:"egress,omitempty"`
	MinNotice      string   `yaml:"min_notice,omitempty"` // bronze only

	// lines maps a field to the YAML line it came from, so problems found
	// after parsing still point into the file.
	lines map[string]int
}

// jobSpecFields lists the YAML field names in documentation order.
var jobSpecFields = []string{
	"name", "runtime", "image", "module", "command", "env", "gpus", "gpu", "vram", "cc", "cpu",
	"ram", "disk", "tier", "max_price", "min_reliability", "region", "max_rtt", "duration",
	"max_duration", "start_by", "bid_window", "datasets", "pricing", "egress", "min_notice",
}

// JobSpecFields returns the field names a job spec accepts, in
// documentation order. The CLI flag of a field is its name with '_'
// replaced by '-' (max_price: --max-price), except datasets (--dataset).
func JobSpecFields() []string { return slices.Clone(jobSpecFields) }

// Set sets one field from its text form, as a command-line flag gives it.
// name is a field name or its flag spelling ("max-price"). Lists (gpu,
// region, datasets) are comma-separated and replace the current list; env
// takes KEY=VALUE and adds one variable; command cannot be set here (it is
// the argument list after --; assign Command). Values are checked as far as
// they stand alone; Validate checks the spec as a whole.
func (s *JobSpec) Set(name, value string) error {
	field := strings.ReplaceAll(name, "-", "_")
	if field == "dataset" {
		field = "datasets" // the CLI flag is singular and repeatable: --dataset CID
	}
	if err := s.set(field, value); err != nil {
		return fmt.Errorf("auction.JobSpec.Set: %w: %s: %w", ErrInvalidJobSpec, field, err)
	}
	delete(s.lines, field)
	return nil
}

func (s *JobSpec) set(field, v string) error {
	switch field {
	case "name":
		s.Name = v
	case "runtime":
		s.Runtime = v
	case "image":
		s.Image = v
	case "module":
		s.Module = v
	case "vram":
		s.VRAM = v
	case "cc":
		s.CC = v
	case "ram":
		s.RAM = v
	case "disk":
		s.Disk = v
	case "tier":
		s.Tier = v
	case "max_rtt":
		s.MaxRTT = v
	case "duration":
		s.Duration = v
	case "max_duration":
		s.MaxDuration = v
	case "start_by":
		s.StartBy = v
	case "bid_window":
		s.BidWindow = v
	case "pricing":
		s.Pricing = v
	case "min_notice":
		s.MinNotice = v
	case "gpus", "cpu":
		if !jobIsDigits(v, 1, 6) {
			return fmt.Errorf("takes a whole number, got %q", v)
		}
		n, _ := strconv.Atoi(v)
		if field == "gpus" {
			s.GPUs = &n
		} else {
			s.CPU = n
		}
	case "max_price", "min_reliability":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || strings.Trim(v, "0123456789.eE+-") != "" || math.IsInf(f, 0) {
			what := "USD per GPU-hour such as 1.80"
			if field == "min_reliability" {
				what = "a number from 0 to 1 such as 0.95"
			}
			return fmt.Errorf("takes %s, got %q", what, v)
		}
		if field == "max_price" {
			s.MaxPrice = f
		} else {
			s.MinReliability = f
		}
	case "egress":
		switch v {
		case "true":
			s.Egress = true
		case "false":
			s.Egress = false
		default:
			return fmt.Errorf("takes true or false, got %q", v)
		}
	case "gpu", "region", "datasets":
		list := []string{}
		if v != "" {
			for _, x := range strings.Split(v, ",") {
				if x = strings.TrimSpace(x); x == "" {
					return fmt.Errorf("empty entry in %q", v)
				}
				list = append(list, x)
			}
		}
		s.setList(field, list)
	case "env":
		k, val, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("takes KEY=VALUE, got %q", v)
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = val
	case "command":
		return errors.New("is the argument list after --; assign JobSpec.Command")
	default:
		return jobUnknownField(field)
	}
	return nil
}

func (s *JobSpec) setList(field string, list []string) {
	switch field {
	case "gpu":
		s.GPU = list
	case "region":
		s.Region = list
	case "datasets":
		s.Datasets = list
	}
}

func jobUnknownField(field string) error {
	if sug, ok := Closest(field, jobSpecFields); ok {
		return fmt.Errorf("unknown field %q (did you mean %q?)", field, sug)
	}
	return fmt.Errorf("unknown field %q; fields are %s", field, strings.Join(jobSpecFields, ", "))
}

// ParseJobSpec parses and validates a YAML job spec (at most
// MaxJobSpecSize bytes). It is strict: unknown or repeated fields, values
// of the wrong shape and more than one document are errors, reported all
// at once with their line numbers.
func ParseJobSpec(data []byte) (*JobSpec, error) {
	s, err := parseJobSpec(data)
	if err != nil {
		return nil, fmt.Errorf("auction.ParseJobSpec: %w", err)
	}
	return s, nil
}

func parseJobSpec(data []byte) (*JobSpec, error) {
	if len(data) > MaxJobSpecSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidJobSpec, len(data), MaxJobSpecSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty document", ErrInvalidJobSpec)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidJobSpec, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: line %d: a job spec is one YAML document; found another after it", ErrInvalidJobSpec, extra.Line)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: a job spec is a mapping of field: value", ErrInvalidJobSpec, root.Line)
	}
	s := &JobSpec{lines: map[string]int{}}
	sp := newSpecProblems(s)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], yamlDeref(root.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			sp.addf(fmt.Sprintf("line %d", k.Line), "field names are plain words")
			continue
		}
		field := k.Value
		if first, dup := s.lines[field]; dup {
			sp.addf(fmt.Sprintf("line %d: %s", k.Line, field), "repeated (first on line %d)", first)
			continue
		}
		if !slices.Contains(jobSpecFields, field) {
			sp.addf(fmt.Sprintf("line %d", k.Line), "%v", jobUnknownField(field))
			continue
		}
		s.lines[field] = k.Line
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // "field:" with no value: the default
		}
		if err := s.setNode(field, v); err != nil {
			sp.add(field, "%v", err)
			sp.skip[field] = true
		}
	}
	s.resolve(sp)
	if err := sp.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// deref follows a YAML alias to its anchor (one level: anchors of anchors
// are resolved by the parser already).
func yamlDeref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func (s *JobSpec) setNode(field string, v *yaml.Node) error {
	switch field {
	case "command":
		args, err := yamlScalarList(v)
		if err != nil {
			return fmt.Errorf("%w, e.g. [python, train.py]; it is never split by a shell", err)
		}
		s.Command = args
	case "env":
		if v.Kind != yaml.MappingNode {
			return errors.New("want a mapping of NAME: value")
		}
		s.Env = map[string]string{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], yamlDeref(v.Content[i+1])
			if k.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: want NAME: value", k.Line)
			}
			if _, dup := s.Env[k.Value]; dup {
				return fmt.Errorf("line %d: %s repeated", k.Line, k.Value)
			}
			s.Env[k.Value] = val.Value
		}
	case "gpu", "region", "datasets":
		if v.Kind == yaml.ScalarNode {
			return s.set(field, v.Value) // "gpu: h100" or "region: de,fr", as on the command line
		}
		list, err := yamlScalarList(v)
		if err != nil {
			return err
		}
		s.setList(field, list)
	default:
		if v.Kind != yaml.ScalarNode {
			return errors.New("want a single value, not a list or mapping")
		}
		return s.set(field, v.Value)
	}
	return nil
}

func yamlScalarList(v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, errors.New("want a list")
	}
	out := make([]string, 0, len(v.Content))
	for _, e := range v.Content {
		e = yamlDeref(e)
		if e.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: list entries must be single values", e.Line)
		}
		out = append(out, e.Value)
	}
	return out, nil
}

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
		MaxRTTMs:               c.MaxRTTMs,
		ExpectedDurationSec:    c.ExpectedDurationSec,
		MaxDurationSec:         c.MaxDurationSec,
		StartByMs:              startBy,
		BidWindowMs:            c.BidWindowMs,
		Datasets:               c.Datasets,
		Pricing:                c.Pricing,
		Egress:                 c.Egress,
		MinNoticeSec:           c.MinNoticeSec,
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
	sp.addf(path, format, args...)
}

// err lists the problems in file order (those without a line, such as a
// missing field, last), so they read top to bottom against the YAML.
func (sp *specProblems) err() error {
	if len(sp.list) == 0 {
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
	slices.SortStableFunc(sp.list, func(a, b string) int { return line(a) - line(b) })
	return fmt.Errorf("%w: %s", ErrInvalidJobSpec, strings.Join(sp.list, "; "))
}

func jobIsDigits(s string, minLen, maxLen int) bool { return digits(s, minLen, maxLen) }

// isPlainDecimal accepts digits with at most one interior point: no sign,
// exponent, or leading/trailing point, as in docs/query.md.
func jobIsDecimal(s string) bool {
	if len(s) > 32 {
		return false
	}
	i, f, dot := strings.Cut(s, ".")
	return digits(i, 1, 32) && (!dot || digits(f, 1, 32))
}

// exactDecimal returns f as the exact decimal it was most likely written
// as (the shortest representation that round-trips), so 1.8 is 18/10 and
// not the binary float just below it.
func jobExactDecimal(f float64) (*big.Rat, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'f', -1, 64))
	return r, ok
}

func jobValidArg(s string, maxLen int) bool {
	return len(s) <= maxLen && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// resolve validates s, reporting every problem to sp, and returns the
// normalized spec (meaningful only when sp stays empty).
func (s *JobSpec) resolve(sp *specProblems) *jobSpecCanon {
	c := &jobSpecCanon{V: JobSpecVersion, Name: s.Name, Egress: s.Egress}
	if !printable(s.Name, MaxTextLen) {
		sp.add("name", "must be at most %d printable ASCII characters", MaxTextLen)
	}
	s.resolveWorkload(sp, c)
	s.resolveResources(sp, c)
	s.resolveMarket(sp, c)
	s.resolveTimes(sp, c)
	return c
}

func (s *JobSpec) resolveWorkload(sp *specProblems, c *jobSpecCanon) {
	rt := strings.ToLower(s.Runtime)
	switch {
	case rt != "":
	case s.Image != "" && s.Module != "":
		sp.add("image", "set image (docker) or module (wasm), not both")
	case s.Image != "":
		rt = RuntimeDocker
	case s.Module != "":
		rt = RuntimeWasm
	default:
		sp.add("image", "missing: set image (docker, REF@sha256:<64 hex>) or module (wasm, a CID)")
	}
	c.Runtime = rt
	switch rt {
	case "":
	case RuntimeDocker:
		if s.Module != "" {
			sp.add("module", "is for the wasm runtime; the docker runtime runs image")
		}
		if err := checkImageDigestRef(s.Image); err != nil {
			sp.add("image", "%v", err)
		}
		c.Image = s.Image
	case RuntimeWasm:
		if s.Image != "" {
			sp.add("image", "is for the docker runtime; the wasm runtime runs module")
		}
		if s.Module == "" {
			sp.add("module", "missing: the wasm runtime needs the module's CID")
		} else if m, err := jobCanonicalCID(s.Module); err != nil {
			sp.add("module", "%v", err)
		} else {
			c.Module = m
		}
	default:
		sp.add("runtime", "%q is not docker or wasm", s.Runtime)
	}
	total := 0
	if len(s.Command) > maxCommandArgs {
		sp.add("command", "%d arguments, at most %d", len(s.Command), maxCommandArgs)
	}
	for i, a := range s.Command {
		total += len(a)
		if !jobValidArg(a, maxArgLen) {
			sp.add(fmt.Sprintf("command[%d]", i), "must be valid UTF-8 without NUL, at most %d bytes", maxArgLen)
		}
	}
	if len(s.Env) > maxEnvVars {
		sp.add("env", "%d variables, at most %d", len(s.Env), maxEnvVars)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v := s.Env[k]
		total += len(k) + len(v)
		if !jobValidEnvName(k) {
			sp.add("env", "%q is not a variable name (letters, digits and _, not starting with a digit)", k)
		}
		if !jobValidArg(v, maxArgLen) {
			sp.add("env."+k, "must be valid UTF-8 without NUL, at most %d bytes", maxArgLen)
		}
	}
	// A spec built in Go rather than parsed must fit the same bound.
	if total > MaxJobSpecSize {
		sp.add("command", "command and env hold %d bytes, at most %d", total, MaxJobSpecSize)
	}
	if len(s.Command) > 0 {
		c.Command = slices.Clone(s.Command)
	}
	if len(s.Env) > 0 {
		c.Env = maps.Clone(s.Env)
	}
}

func (s *JobSpec) resolveResources(sp *specProblems, c *jobSpecCanon) {
	gpus := 1
	if s.GPUs != nil {
		gpus = *s.GPUs
	}
	switch {
	case gpus < 0 || gpus > MaxGPUsPerHost:
		sp.add("gpus", "%d out of range 1..%d", gpus, MaxGPUsPerHost)
	case gpus == 0:
		// Bids lease whole GPUs and prices are per GPU-hour, so a job
		// without GPUs could never be filled; say so now rather than post
		// an RFQ nobody can answer.
		sp.add("gpus", "0: CPU-only jobs are not auctioned yet (bids lease whole GPUs); ask for 1 or more")
	default:
		c.Resources.GPUs = uint32(gpus)
	}
	c.Resources.Models = jobNormalizeList(sp, "gpu", s.GPU, MaxRFQModels, func(m string) (string, error) {
		l := strings.ToLower(m)
		if IsModelSlug(l) {
			return l, nil
		}
		msg := fmt.Sprintf("%q is not a GPU model slug or family (lower-case letters and digits joined by '-', e.g. h100 or h100-80gb)", m)
		if sug := jobSlugify(m); IsModelSlug(sug) {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		return "", errors.New(msg)
	})
	if s.VRAM != "" {
		c.Resources.MinVRAMMiB = jobResolveSize(sp, "vram", s.VRAM, 1<<20, maxVRAMMiB)
	}
	if s.CC != "" {
		cc := s.CC
		if digits(cc, 1, 2) {
			cc += ".0" // bare major, as in docs/query.md
		}
		if maj, minor, err := ParseComputeCap(cc); err != nil {
			sp.add("cc", "%q is not a compute capability such as 8.0 or 9.0", s.CC)
		} else {
			c.Resources.MinComputeCap = fmt.Sprintf("%d.%d", maj, minor)
		}
	}
	if s.CPU < 0 || s.CPU > maxCPUCores {
		sp.add("cpu", "%d out of range 0..%d cores", s.CPU, maxCPUCores)
	} else {
		c.Resources.CPUCores = uint32(s.CPU)
	}
	if s.RAM != "" {
		c.Resources.RAMMiB = jobResolveSize(sp, "ram", s.RAM, 1<<20, maxRAMMiB)
	}
	if s.Disk != "" {
		c.Resources.DiskGiB = jobResolveSize(sp, "disk", s.Disk, 1<<30, maxDiskGiB)
	}
}

func (s *JobSpec) resolveMarket(sp *specProblems, c *jobSpecCanon) {
	c.Tier = TierSilver
	if s.Tier != "" {
		t, err := ParseTier(strings.ToLower(s.Tier))
		if err != nil {
			sp.add("tier", "%q is not gold, silver or bronze%s", s.Tier, jobSuggest(strings.ToLower(s.Tier), []string{"gold", "silver", "bronze"}))
		}
		c.Tier = t
	}
	switch r, ok := jobExactDecimal(s.MaxPrice); {
	case s.MaxPrice == 0:
		sp.add("max_price", "missing: the most you pay per GPU-hour, in USD (e.g. 1.80)")
	case !ok || r.Sign() < 0:
		sp.add("max_price", "%v is not a positive USD amount", s.MaxPrice)
	default:
		r.Mul(r, big.NewRat(1_000_000, 1))
		switch {
		case !r.IsInt():
			sp.add("max_price", "%v is finer than 1 micro-USD (at most 6 decimal places)", s.MaxPrice)
		case r.Num().Cmp(big.NewInt(MaxPriceUUSD)) > 0:
			sp.add("max_price", "%v exceeds %d USD per GPU-hour", s.MaxPrice, MaxPriceUUSD/1_000_000)
		default:
			c.MaxPriceMicro = r.Num().Uint64()
		}
	}
	if r, ok := jobExactDecimal(s.MinReliability); !ok || r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		sp.add("min_reliability", "%v is not a number from 0 to 1", s.MinReliability)
	} else {
		// Rounded up to the next 0.001: "at least 0.9995" must not admit 0.999.
		c.MinReliabilityPermille = uint32(jobCeil(r.Mul(r, big.NewRat(1000, 1))))
	}
	c.Regions = jobNormalizeList(sp, "region", s.Region, MaxRFQRegions, func(r string) (string, error) {
		l := strings.ToLower(r)
		if IsCountryCode(l) {
			return l, nil
		}
		msg := fmt.Sprintf("%q is not an ISO 3166-1 alpha-2 country code such as de or us", r)
		if sug := SuggestCountry(r); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		return "", errors.New(msg)
	})
	c.Datasets = jobNormalizeList(sp, "datasets", s.Datasets, MaxRFQDatasets, jobCanonicalCID)
	switch PricingRule(strings.ToLower(s.Pricing)) {
	case "", PayBid:
		c.Pricing = PayBid
	case PaySecond:
		c.Pricing = PaySecond
	default:
		sp.add("pricing", "%q is not first or second%s", s.Pricing, jobSuggest(strings.ToLower(s.Pricing), []string{"first", "second"}))
	}
}

func (s *JobSpec) resolveTimes(sp *specProblems, c *jobSpecCanon) {
	limit := uint64(MaxJobDuration / time.Second)
	if s.Duration == "" {
		sp.add("duration", "missing: the expected run time, e.g. 2h")
	} else if d, ok := jobResolveDuration(sp, "duration", s.Duration, time.Second, MaxJobDuration); ok {
		c.ExpectedDurationSec = d
	}
	if s.MaxDuration == "" {
		c.MaxDurationSec = min(2*c.ExpectedDurationSec, limit)
	} else if d, ok := jobResolveDuration(sp, "max_duration", s.MaxDuration, time.Second, MaxJobDuration); ok {
		c.MaxDurationSec = d
		if c.ExpectedDurationSec > 0 && d < c.ExpectedDurationSec {
			sp.add("max_duration", "%s is shorter than duration %s", s.MaxDuration, s.Duration)
		}
	}
	if s.MaxRTT != "" {
		if d, ok := jobResolveDuration(sp, "max_rtt", s.MaxRTT, time.Millisecond, maxRTT); ok {
			c.MaxRTTMs = uint32(d)
		}
	}
	if s.StartBy != "" {
		if t, err := time.Parse(time.RFC3339, s.StartBy); err == nil {
			if t.UnixMilli() <= 0 {
				sp.add("start_by", "%q is before 1970", s.StartBy)
			}
			c.StartByMs = t.UnixMilli()
		} else if _, err := time.ParseDuration(s.StartBy); err == nil {
			if d, ok := jobResolveDuration(sp, "start_by", s.StartBy, time.Second, MaxJobDuration); ok {
				c.StartWithinSec = d
			}
		} else {
			sp.add("start_by", "%q is neither an RFC 3339 time (2026-03-02T15:04:05Z) nor a duration from submission (30m)", s.StartBy)
		}
	}
	c.BidWindowMs = uint32(DefaultBidWindow / time.Millisecond)
	if s.BidWindow != "" {
		if d, ok := jobResolveDuration(sp, "bid_window", s.BidWindow, time.Millisecond, MaxBidWindowMs*time.Millisecond); ok {
			if d < MinBidWindowMs {
				sp.add("bid_window", "%s is shorter than %dms: providers could not answer in time", s.BidWindow, MinBidWindowMs)
			}
			c.BidWindowMs = uint32(d)
		}
	}
	if s.MinNotice != "" {
		if c.Tier != TierBronze && c.Tier != "" { // "" : tier itself is wrong, already reported
			sp.add("min_notice", "applies only to tier bronze (tier is %s): gold and silver are never preempted", c.Tier)
		}
		if d, ok := jobResolveDuration(sp, "min_notice", s.MinNotice, time.Second, MaxJobDuration); ok {
			c.MinNoticeSec = uint32(d)
		}
	}
}

// resolveDuration parses raw and returns it in units, rounded up, if it
// is positive and at most maxD.
func jobResolveDuration(sp *specProblems, field, raw string, unit, maxD time.Duration) (uint64, bool) {
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		msg := fmt.Sprintf("%q is not a duration such as 90s, 30m or 2h", raw)
		if n, ok := strings.CutSuffix(raw, "d"); ok && digits(n, 1, 4) {
			days, _ := strconv.Atoi(n)
			msg = fmt.Sprintf("%q: durations have no day unit; write %dh", raw, days*24)
		}
		sp.add(field, "%s", msg)
	case d <= 0:
		sp.add(field, "%q must be positive", raw)
	case d > maxD:
		sp.add(field, "%q exceeds %s", raw, maxD)
	default:
		return uint64((d + unit - 1) / unit), true
	}
	return 0, false
}

// jobSizeUnits are the size units of docs/query.md. A bare number is
// vendor gigabytes: cards are labelled in GB, and NVML reports a little
// less than the binary size.
var jobSizeUnits = []struct {
	name  string
	bytes int64
}{{"MiB", 1 << 20}, {"GiB", 1 << 30}, {"GB", 1_000_000_000}, {"TB", 1_000_000_000_000}}

// resolveSize parses raw and returns it in units of unitBytes, rounded up
// ("at least 0.1 MiB" must not become 0), if it is in 1..maxUnits.
func jobResolveSize(sp *specProblems, field, raw string, unitBytes int64, maxUnits uint64) uint64 {
	i := 0
	for i < len(raw) && (raw[i] >= '0' && raw[i] <= '9' || raw[i] == '.') {
		i++
	}
	num, unit := raw[:i], strings.TrimSpace(raw[i:])
	if !jobIsDecimal(num) {
		sp.add(field, "%q is not a size such as 40GiB, 80GB or 24576MiB", raw)
		return 0
	}
	mult := int64(1_000_000_000)
	if unit != "" {
		j := -1
		for k, u := range jobSizeUnits {
			if strings.EqualFold(u.name, unit) {
				j = k
			}
		}
		if j < 0 {
			names := []string{"mib", "gib", "gb", "tb"}
			sug := ""
			if k, ok := Closest(strings.ToLower(unit), names); ok {
				sug = fmt.Sprintf(" (did you mean %q?)", jobSizeUnits[slices.Index(names, k)].name)
			}
			sp.add(field, "bad unit %q in %q; use MiB, GiB, GB or TB%s", unit, raw, sug)
			return 0
		}
		mult = jobSizeUnits[j].bytes
	}
	r, _ := new(big.Rat).SetString(num)
	r.Mul(r, big.NewRat(mult, unitBytes))
	n := jobCeil(r)
	switch {
	case n == 0:
		sp.add(field, "%q must be more than 0 (leave %s out for no minimum)", raw, field)
		return 0
	case n > maxUnits:
		sp.add(field, "%q exceeds %d %s", raw, maxUnits, map[int64]string{1 << 20: "MiB", 1 << 30: "GiB"}[unitBytes])
		return 0
	}
	return n
}

// ceilRat rounds a non-negative r up to an integer, saturating far above
// any limit checked against it.
func jobCeil(r *big.Rat) uint64 {
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !r.IsInt() {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsUint64() {
		return math.MaxUint64
	}
	return n.Uint64()
}

// normalizeList applies norm to each entry and returns the results sorted
// (a set's order carries no meaning, and sorting gives one CID per set),
// reporting bad entries, duplicates after normalization and overlong lists.
func jobNormalizeList(sp *specProblems, field string, xs []string, maxN int, norm func(string) (string, error)) []string {
	if len(xs) > maxN {
		sp.add(field, "%d entries, at most %d", len(xs), maxN)
		return nil
	}
	var out []string
	for i, x := range xs {
		n, err := norm(x)
		if err != nil {
			sp.add(fmt.Sprintf("%s[%d]", field, i), "%v", err)
			continue
		}
		if slices.Contains(out, n) {
			sp.add(fmt.Sprintf("%s[%d]", field, i), "duplicate %q", n)
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// jobCanonicalCID parses s as a CID and returns its canonical text form.
func jobCanonicalCID(s string) (string, error) {
	c, err := cid.Decode(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a CID", s)
	case len(c.Hash()) > maxCIDHashLen:
		return "", fmt.Errorf("%q has a hash longer than %d bytes", s, maxCIDHashLen)
	}
	return c.String(), nil
}

func jobSuggest(s string, candidates []string) string {
	if sug, ok := Closest(s, candidates); ok {
		return fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return ""
}

// slugify turns a vendor name ("H100 80GB") into the slug a user probably
// meant ("h100-80gb"), for suggestions only.
func jobSlugify(s string) string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ' ' || r == '_' || r == '-' })
	return strings.Join(f, "-")
}

func jobValidEnvName(k string) bool {
	if k == "" || len(k) > maxEnvNameLen || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		b := k[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}
