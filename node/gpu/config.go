package gpu

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Backend kinds accepted in Config.Backend.
const (
	BackendAuto = "auto"
	BackendNVML = "nvml"
	BackendSim  = "sim"
	BackendNone = "none"
)

// Config selects and configures a backend.
type Config struct {
	// Backend is "auto" (the default when empty), "nvml", "sim" or "none".
	// auto uses NVML when it initializes and none otherwise; it never picks
	// sim, so a provider cannot advertise simulated GPUs by accident.
	Backend string `toml:"backend"`
	// NVMLLibraryPath overrides the library go-nvml dlopens
	// (default "libnvidia-ml.so.1").
	NVMLLibraryPath string `toml:"nvml_library_path"`
	// Sim configures the sim backend; used only when Backend is "sim".
	Sim SimConfig `toml:"sim"`
}

// SimConfig configures the simulated backend.
type SimConfig struct {
	// Profiles lists one profile key per simulated GPU, in index order, e.g.
	// ["h100-sxm-80gb", "h100-sxm-80gb"]. See ProfileKeys.
	Profiles []string `toml:"profiles"`
	// Seed makes UUIDs, serials and noise reproducible. 0 is a valid seed.
	Seed uint64 `toml:"seed"`
	// Clock is the time source; nil means time.Now. Tests and the devnet
	// pass a fake clock so the physics advance without sleeping.
	Clock func() time.Time `toml:"-"`
	// DriverVersion and CUDAVersion are what the simulated driver reports;
	// empty means "550.54.15" and "12.4", as go-nvml's DGX mocks do.
	DriverVersion string `toml:"driver_version"`
	CUDAVersion   string `toml:"cuda_version"`
}

// Open returns the backend cfg selects. A nil logger discards logs.
func Open(cfg Config, logger *slog.Logger) (Backend, error) {
	logger = orDiscard(logger)
	switch cfg.Backend {
	case "", BackendAuto:
		b, err := openNVML(cfg, logger)
		if err == nil {
			return b, nil
		}
		if errors.Is(err, ErrNoNVML) {
			logger.Info("gpu: nvml not available, running without gpus", "err", err)
			return NewNone(), nil
		}
		// NVML initialized but could not enumerate devices: that is a broken
		// driver, not a GPU-less host, so say so instead of hiding the GPUs.
		return nil, err
	case BackendNVML:
		return openNVML(cfg, logger)
	case BackendSim:
		return NewSim(cfg.Sim, logger)
	case BackendNone:
		return NewNone(), nil
	default:
		return nil, fmt.Errorf("gpu: open: unknown backend %q (want auto, nvml, sim or none)", cfg.Backend)
	}
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
