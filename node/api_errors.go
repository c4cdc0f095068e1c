package node

import (
	"errors"
	"strings"
)

// userMessage is err as a user should read it: from the first sentinel it
// wraps onwards, so the operation names that wrap it ("auction.ParseJobSpec:",
// "renter.Submit:") stay in the daemon's log and out of the CLI. An error
// wrapping none of the sentinels is returned whole.
func userMessage(err error, sentinels ...error) string {
	msg := err.Error()
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			continue
		}
		if i := strings.Index(msg, s.Error()); i >= 0 {
			return msg[i:]
		}
	}
	return msg
}
