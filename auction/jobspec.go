package auction

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// DefaultMaxWait is how long a renter keeps auctioning a job that no
	// auction found a plan for, from its submission, unless its start_by
	// says otherwise (the node's market.max_wait): GPUs busy now free up,
	// as in any cluster's queue.
	DefaultMaxWait = 24 * time.Hour
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
	// Model and ModelSize name the model the job serves (jobspec_model.go).
	Model     string `yaml:"model,omitempty"`
	ModelSize string `yaml:"model_size,omitempty"`
	// GPUs is the GPU count; nil means 1, or 0 (CPU-only) for wasm, which
	// cannot use a GPU (a pointer, so an explicit count always wins).
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
	Near           []string `yaml:"near,omitempty"`            // country codes preferred, not required
	MaxRTT         string   `yaml:"max_rtt,omitempty"`
	Duration       string   `yaml:"duration,omitempty"` // expected run time
	MaxDuration    string   `yaml:"max_duration,omitempty"`
	StartBy        string   `yaml:"start_by,omitempty"` // RFC 3339 time or duration from submission
	BidWindow      string   `yaml:"bid_window,omitempty"`
	Datasets       []string `yaml:"datasets,omitempty"` // CIDs
	Pricing        string   `yaml:"pricing,omitempty"`  // first or second
	Egress         bool     `yaml:"egress,omitempty"`
	MinNotice      string   `yaml:"min_notice,omitempty"` // bronze only
	// MaxWait is how long the renter auctions again while no auction
	// finds a plan (jobspec_wait.go); renter-side, like Replicas.
	MaxWait string `yaml:"max_wait,omitempty"`
	// Replicas is how many distinct providers run the job (jobspec_replicas.go).
	Replicas int `yaml:"replicas,omitempty"`
	// Verifier is the CID of a WASM module that judges replicas' differing
	// outputs (jobspec_verifier.go).
	Verifier string `yaml:"verifier,omitempty"`
	// ReplicaRegions is distinct to place every replica in another
	// country, or any (jobspec_replicas.go).
	ReplicaRegions string `yaml:"replica_regions,omitempty"`
	// ReplicasMin, ReplicasMax, ScaleInFlight and ScaleWindow bound and
	// steer a replicated service's count (jobspec_scale.go).
	ReplicasMin   int    `yaml:"min_replicas,omitempty"`
	ReplicasMax   int    `yaml:"max_replicas,omitempty"`
	ScaleInFlight int    `yaml:"scale_in_flight,omitempty"`
	ScaleWindow   string `yaml:"scale_window,omitempty"`
	// MaxUSDPerMTok caps what the scaler lets a million tokens cost.
	MaxUSDPerMTok float64 `yaml:"max_usd_per_mtok,omitempty"`

	// Service jobs (kind: service; jobspec_service.go).
	Kind               string   `yaml:"kind,omitempty"` // batch (default) or service
	Ports              []int    `yaml:"ports,omitempty"`
	Health             string   `yaml:"health,omitempty"` // http:PORT/PATH or tcp:PORT
	HealthInterval     string   `yaml:"health_interval,omitempty"`
	HealthThreshold    int      `yaml:"health_threshold,omitempty"`
	ForwardPeers       []string `yaml:"forward_peers,omitempty"`
	ReauctionUnhealthy bool     `yaml:"reauction_unhealthy,omitempty"`

	// lines maps a field to the YAML line it came from, so problems found
	// after parsing still point into the file.
	lines map[string]int
}

// jobSpecFields lists the YAML field names in documentation order.
var jobSpecFields = []string{
	"name", "runtime", "image", "module", "command", "env", "model", "model_size", "gpus", "gpu", "vram", "cc", "cpu",
	"ram", "disk", "tier", "max_price", "min_reliability", "region", "near", "max_rtt", "duration",
	"max_duration", "start_by", "max_wait", "bid_window", "datasets", "pricing", "egress", "min_notice",
	"replicas", "verifier", "replica_regions", "min_replicas", "max_replicas", "scale_in_flight", "scale_window", "max_usd_per_mtok", "kind", "ports", "health", "health_interval", "health_threshold", "forward_peers", "reauction_unhealthy",
}

// JobSpecFields returns the field names a job spec accepts, in
// documentation order. The CLI flag of a field is its name with '_'
// replaced by '-' (max_price: --max-price), except datasets (--dataset).
func JobSpecFields() []string { return slices.Clone(jobSpecFields) }

// Set sets one field from its text form, as a command-line flag gives it.
// name is a field name or its flag spelling ("max-price"). Lists (gpu,
// region, near, datasets) are comma-separated and replace the current list; env
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
	case "model":
		s.Model = v
	case "model_size":
		s.ModelSize = v
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
	case "gpu", "region", "near", "datasets":
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
	case "max_wait":
		s.MaxWait = v
	case "replicas":
		return s.setReplicas(v)
	case "verifier":
		s.Verifier = v
	case "replica_regions":
		s.ReplicaRegions = v
	case "command":
		return errors.New("is the argument list after --; assign JobSpec.Command")
	default:
		if ok, err := s.setService(field, v); ok {
			return err
		}
		if ok, err := s.setScale(field, v); ok {
			return err
		}
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
	case "near":
		s.Near = list
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
			sp.Addf(fmt.Sprintf("line %d", k.Line), "field names are plain words")
			continue
		}
		field := k.Value
		if first, dup := s.lines[field]; dup {
			sp.Addf(fmt.Sprintf("line %d: %s", k.Line, field), "repeated (first on line %d)", first)
			continue
		}
		if !slices.Contains(jobSpecFields, field) {
			sp.Addf(fmt.Sprintf("line %d", k.Line), "%v", jobUnknownField(field))
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
	case "gpu", "region", "near", "datasets":
		if v.Kind == yaml.ScalarNode {
			return s.set(field, v.Value) // "gpu: h100" or "region: de,fr", as on the command line
		}
		list, err := yamlScalarList(v)
		if err != nil {
			return err
		}
		s.setList(field, list)
	case "ports", "forward_peers":
		if v.Kind == yaml.SequenceNode {
			list, err := yamlScalarList(v)
			if err != nil {
				return err
			}
			_, err = s.setService(field, strings.Join(list, ","))
			return err
		}
		return s.set(field, v.Value)
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
