package auction

import (
	"errors"
	"fmt"
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
)

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
	if !attest.Printable(s.Name, MaxTextLen) {
		sp.add("name", "must be at most %d printable ASCII characters", MaxTextLen)
	}
	s.resolveWorkload(sp, c)
	s.resolveResources(sp, c)
	s.resolveMarket(sp, c)
	s.resolveModel(sp, c)
	s.resolveTimes(sp, c)
	s.resolveService(sp, c)
	s.resolveReplicas(sp)
	s.resolveMaxWait(sp)
	s.resolveReplicaRegions(sp)
	s.resolveVerifier(sp)
	s.resolveScale(sp)
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
	if c.Runtime == RuntimeWasm {
		gpus = 0 // WASM cannot use a GPU: by default it leases CPU only
	}
	if s.GPUs != nil {
		gpus = *s.GPUs
	}
	switch {
	case gpus < 0 || gpus > MaxGPUsPerHost:
		sp.add("gpus", "%d out of range 0..%d", gpus, MaxGPUsPerHost)
	default:
		// 0 is a CPU-only job: it leases cores and RAM of a provider's
		// CPU share, priced per hour, and may not ask for GPU properties.
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
	if gpus == 0 && (len(c.Resources.Models) > 0 || c.Resources.MinVRAMMiB > 0 || c.Resources.MinComputeCap != "") {
		sp.add("gpus", "0 (a CPU-only job) cannot ask for gpu, vram or cc")
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
	c.Regions = jobNormalizeList(sp, "region", s.Region, MaxRFQRegions, jobCountryCode)
	c.Near = jobNormalizeList(sp, "near", s.Near, MaxRFQRegions, jobCountryCode)
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
	case len(c.Hash()) > attest.MaxCIDHashLen:
		return "", fmt.Errorf("%q has a hash longer than %d bytes", s, attest.MaxCIDHashLen)
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

// jobCountryCode normalizes a region as written in a spec (de, DE) to a
// lower-case ISO 3166-1 alpha-2 code, suggesting one for a near miss.
func jobCountryCode(r string) (string, error) {
	l := strings.ToLower(r)
	if IsCountryCode(l) {
		return l, nil
	}
	msg := fmt.Sprintf("%q is not an ISO 3166-1 alpha-2 country code such as de or us", r)
	if sug := SuggestCountry(r); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return "", errors.New(msg)
}
