package query

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/ipfs/go-cid"
)

// value is one parsed operand. Exactly the member the field's kind uses is
// set; text is the canonical spelling used by Query.String.
type value struct {
	i    int64
	r    float64
	s    string
	text string
}

// Size units. A bare number is vendor gigabytes (GB, 10^9 bytes): cards are
// sold by the decimal size on their label and NVML reports a little less
// than the binary size, so "vram>=80" must match an "80GB" H100 (81559 MiB,
// 85.5 GB but only 79.6 GiB). See docs/query.md.
var sizeUnits = []struct {
	name  string
	bytes int64
}{
	{"MiB", 1 << 20}, {"GiB", 1 << 30}, {"GB", 1_000_000_000}, {"TB", 1_000_000_000_000},
}

var unitNames = func() []string {
	out := make([]string, len(sizeUnits))
	for i, u := range sizeUnits {
		out[i] = u.name
	}
	return out
}()

func isUnit(s string) bool {
	for _, u := range sizeUnits {
		if strings.EqualFold(s, u.name) {
			return true
		}
	}
	return false
}

const uUSDPerUSD = 1_000_000

// parseValue parses raw (a word or quoted string) as a value of f's kind.
// Errors are plain messages; the caller adds the position.
func parseValue(f *field, raw string) (value, error) {
	switch f.kind {
	case kindModel:
		s := strings.ToLower(raw)
		if !auction.IsModelSlug(s) {
			return value{}, fmt.Errorf("%q is not a GPU model (lower-case letters and digits joined by '-', e.g. h100 or h100-80gb)", raw)
		}
		return value{s: s, text: s}, nil
	case kindCount:
		if !isDigits(raw) || len(raw) > 9 {
			return value{}, fmt.Errorf("%s takes a whole number, got %q", f.name, raw)
		}
		n, _ := strconv.ParseInt(raw, 10, 64)
		return value{i: n, text: strconv.FormatInt(n, 10)}, nil
	case kindSize:
		return parseSize(f, raw)
	case kindCC:
		s := raw
		if isDigits(s) {
			s += ".0"
		}
		maj, min, err := auction.ParseComputeCap(s)
		if err != nil {
			return value{}, fmt.Errorf("cc takes a compute capability like 8.9 or 9.0, got %q", raw)
		}
		return value{i: int64(maj*100 + min), text: s}, nil
	case kindPrice:
		return parsePrice(f, raw)
	case kindRatio:
		if !isDecimal(raw) {
			return value{}, fmt.Errorf("%s takes a number from 0 to 1, got %q", f.name, raw)
		}
		r, err := strconv.ParseFloat(raw, 64)
		if err != nil || r < 0 || r > 1 {
			return value{}, fmt.Errorf("%s takes a number from 0 to 1, got %q", f.name, raw)
		}
		return value{r: r, text: raw}, nil
	case kindEnum, kindChoice:
		return parseName(f, raw)
	case kindHolds:
		c, err := cid.Decode(raw)
		if err != nil {
			return value{}, fmt.Errorf("%s takes a CID, got %q", f.name, raw)
		}
		return value{s: c.KeyString(), text: c.String()}, nil
	case kindBool:
		switch strings.ToLower(raw) {
		case "true":
			return value{i: 1, text: "true"}, nil
		case "false":
			return value{i: 0, text: "false"}, nil
		}
		return value{}, fmt.Errorf("%s takes true or false, got %q", f.name, raw)
	}
	return value{}, fmt.Errorf("field %s has no parser", f.name)
}

func parseName(f *field, raw string) (value, error) {
	s := strings.ToLower(raw)
	if f.name == "region" {
		if auction.IsCountryCode(s) {
			return value{s: s, text: s}, nil
		}
		msg := fmt.Sprintf("unknown country code %q for region; use ISO 3166-1 alpha-2 codes such as de or us", raw)
		if sug := auction.SuggestCountry(raw); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		return value{}, fmt.Errorf("%s", msg)
	}
	if slices.Contains(f.domain, s) {
		return value{s: s, text: s}, nil
	}
	msg := fmt.Sprintf("unknown %s %q; valid: %s", f.name, raw, strings.Join(f.domain, ", "))
	if sug, ok := auction.Closest(s, f.domain); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return value{}, fmt.Errorf("%s", msg)
}

// splitNumber splits "80GiB" into "80" and "GiB".
func splitNumber(raw string) (num, unit string) {
	i := 0
	for i < len(raw) && (raw[i] >= '0' && raw[i] <= '9' || raw[i] == '.') {
		i++
	}
	return raw[:i], raw[i:]
}

func parseSize(f *field, raw string) (value, error) {
	num, unit := splitNumber(raw)
	if !isDecimal(num) {
		return value{}, fmt.Errorf("%s takes a size such as 80GiB, 48GB or 512MiB, got %q", f.name, raw)
	}
	mult := int64(1_000_000_000) // bare number: vendor GB
	if unit != "" {
		found := false
		for _, u := range sizeUnits {
			if strings.EqualFold(unit, u.name) {
				mult, found = u.bytes, true
				break
			}
		}
		if !found {
			msg := fmt.Sprintf("bad unit %q in %q for %s; use MiB, GiB, GB or TB", unit, raw, f.name)
			if sug, ok := auction.Closest(strings.ToLower(unit), lowerAll(unitNames)); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", unitNames[slices.Index(lowerAll(unitNames), sug)])
			}
			return value{}, fmt.Errorf("%s", msg)
		}
	}
	r, _ := new(big.Rat).SetString(num)
	r.Mul(r, new(big.Rat).SetInt64(mult))
	// Round up to whole bytes: "at least 0.1MiB" must not become less.
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !r.IsInt() {
		n.Add(n, big.NewInt(1))
	}
	if n.Cmp(big.NewInt(maxBytes)) > 0 {
		return value{}, fmt.Errorf("%s value %q is too large", f.name, raw)
	}
	return value{i: n.Int64(), text: raw}, nil
}

func parsePrice(f *field, raw string) (value, error) {
	num, unit := splitNumber(raw)
	if unit != "" || !isDecimal(num) {
		return value{}, fmt.Errorf("%s takes plain USD per GPU-hour such as 2.5, got %q", f.name, raw)
	}
	r, _ := new(big.Rat).SetString(num)
	r.Mul(r, big.NewRat(uUSDPerUSD, 1))
	if !r.IsInt() {
		return value{}, fmt.Errorf("%s %q is finer than 1 micro-USD (at most 6 decimal places)", f.name, raw)
	}
	if r.Num().Cmp(big.NewInt(auction.MaxPriceUUSD)) > 0 {
		return value{}, fmt.Errorf("%s %q exceeds the largest floor a record may carry (%d USD)", f.name, raw, auction.MaxPriceUUSD/uUSDPerUSD)
	}
	return value{i: r.Num().Int64(), text: raw}, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDecimal accepts "12", "12.5" and ".5"-free forms only: digits with at
// most one interior point. No signs, exponents or fractions.
func isDecimal(s string) bool {
	intPart, frac, hasDot := strings.Cut(s, ".")
	if !isDigits(intPart) || len(s) > 32 {
		return false
	}
	return !hasDot || isDigits(frac)
}

func lowerAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strings.ToLower(x)
	}
	return out
}
