//go:build !cgo || !linux

package gpu

import (
	"fmt"
	"log/slog"
)

// openNVML without cgo: go-nvml cannot compile, so there is no NVML
// backend. auto falls back to none; an explicit "nvml" fails loudly.
func openNVML(Config, *slog.Logger) (Backend, error) {
	return nil, fmt.Errorf("%w: binary built without cgo or not for linux", ErrNoNVML)
}
