package node

import (
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/words"
)

// dur writes a duration in config messages as the user writes it: "24h",
// not "24h0m0s".
type dur time.Duration

func (d dur) String() string { return words.Duration(time.Duration(d)) }

// badDuration is the message for a value that is not a duration.
func badDuration(value string) string {
	msg := fmt.Sprintf("%q is not a duration: write a number and a unit (ms, s, m or h), such as 90s or 24h", value)
	if strings.HasSuffix(strings.TrimSpace(value), "d") {
		msg += "; there is no day unit, write 24h for a day"
	}
	return msg
}
