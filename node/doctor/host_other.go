//go:build !linux

package doctor

import (
	"errors"
	"time"
)

var errUnsupported = errors.New("not supported on this system")

// FreeBytes is not implemented off Linux.
func FreeBytes(string) (uint64, error) { return 0, errUnsupported }

// ClockSync is not implemented off Linux.
func ClockSync() (bool, time.Duration, error) { return false, 0, errUnsupported }
