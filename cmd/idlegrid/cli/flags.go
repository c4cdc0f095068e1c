package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/words"
)

// durationValue is a duration flag in the user's terms: it takes Go's
// units and days ("7d", "1d12h"), and prints "24h" where Go prints
// "24h0m0s" (in --help's defaults too).
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return words.Duration(time.Duration(*d)) }

func (d *durationValue) Type() string { return "duration" }

// parseDuration reads a Go duration with an optional leading number of
// days: "3d", "1d12h", "90m".
func parseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a duration: write a number and a unit (s, m, h or d), such as 90s, 24h or 7d", s)
	t := strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(t, 'd'); i > 0 {
		n, err := strconv.ParseFloat(t[:i], 64)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, t = time.Duration(n*24*float64(time.Hour)), t[i+1:]
		if t == "" {
			return days, nil
		}
	}
	v, err := time.ParseDuration(t)
	if err != nil {
		return 0, bad
	}
	return days + v, nil
}
