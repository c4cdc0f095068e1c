// Package words writes values the way a user reads them in messages,
// tables and pages: lists as "a, b or c" (not Go's "[a b c]"), durations
// as "24h" (not "24h0m0s"), counts with the right plural ("1 bid",
// "2 bids") and sizes in binary units.
package words

import (
	"fmt"
	"strings"
	"time"
)

// OneOf writes choices as "a, b or c"; none as "none".
func OneOf[T ~string](xs []T) string { return join(xs, "or") }

// All writes items as "a, b and c"; none as "none".
func All[T ~string](xs []T) string { return join(xs, "and") }

func join[T ~string](xs []T, last string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	switch len(s) {
	case 0:
		return "none"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + last + " " + s[len(s)-1]
}

// Duration writes d without Go's zero units: "24h", "1h30m", "90s".
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Plural writes "1 file", "2 files"; unit is the singular.
func Plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// Bytes writes a size: "812 bytes", "1.4 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return Plural(int(n), "byte")
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
