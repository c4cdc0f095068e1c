package gpu

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// vendorWords are dropped from marketing names: they say nothing about
// what the card can do.
var vendorWords = map[string]bool{"nvidia": true, "geforce": true, "tesla": true, "quadro": true}

// packagingRE matches tokens that name a board's form factor or memory
// technology rather than the GPU: SXM4, PCIe, HBM3, HBM3e, "80GB".
var packagingRE = regexp.MustCompile(`^(sxm\d*|pcie|hbm\d*e?|\d+gb)$`)

var sizeRE = regexp.MustCompile(`(\d+)gb`)

// ModelSlug turns a device into the canonical model slug used in capacity
// records and capability keys: the GPU's name without vendor and packaging
// words, plus its memory as printed on the label. Examples:
//
//	"NVIDIA H100 80GB HBM3"      -> "h100-80gb"
//	"NVIDIA A100-SXM4-80GB"      -> "a100-80gb"
//	"NVIDIA L40S"  (46068 MiB)   -> "l40s-48gb"
//	"NVIDIA GeForce RTX 4090"    -> "rtx-4090-24gb"
//	"Tesla T4"     (15360 MiB)   -> "t4-16gb"
//
// Two cards with one slug are interchangeable for a renter.
func ModelSlug(name string, memoryMiB uint64) string {
	lower := strings.ToLower(name)
	fields := strings.FieldsFunc(lower, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	var parts []string
	for _, f := range fields {
		if vendorWords[f] || packagingRE.MatchString(f) {
			continue
		}
		parts = append(parts, f)
	}
	if len(parts) == 0 {
		parts = []string{"gpu"}
	}
	label := labelGB(memoryMiB)
	if m := sizeRE.FindStringSubmatch(lower); m != nil {
		label = m[1]
	}
	return strings.Join(parts, "-") + "-" + label + "gb"
}

// labelGB is the marketing size of a card with memoryMiB: vendors print
// decimal gigabytes and NVML reports a little less than the binary size
// (ECC and reserved memory), so round the decimal size to the nearest
// common label.
func labelGB(memoryMiB uint64) string {
	labels := []float64{4, 6, 8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 141, 188, 192}
	gb := float64(memoryMiB) * (1 << 20) / 1e9
	best, bestD := 0.0, math.Inf(1)
	for _, l := range labels {
		// Reported memory sits at or a few percent below the label times
		// 2^30/10^9; compare on that scale.
		if d := math.Abs(gb - l*1.0737); d < bestD {
			best, bestD = l, d
		}
	}
	if bestD > best*0.15 {
		return fmt.Sprintf("%.0f", math.Round(gb))
	}
	return fmt.Sprintf("%.0f", best)
}
