package api

import (
	"net/http"
	"time"
)

// GPUPoint is one GPU's mean telemetry over a short bucket of samples.
type GPUPoint struct {
	At         time.Time `json:"at"`
	UtilPct    float64   `json:"util_pct"`
	PowerW     float64   `json:"power_w"`
	TempC      float64   `json:"temp_c"`
	MemUsedMiB uint64    `json:"mem_used_mib"`
}

// GPUSeries is one GPU's recent telemetry, oldest point first.
type GPUSeries struct {
	UUID   string     `json:"uuid"`
	Name   string     `json:"name,omitempty"`
	Points []GPUPoint `json:"points"`
}

func (s *Server) getGPUHistory(w http.ResponseWriter, _ *http.Request) error {
	h, err := s.b.GPUHistory()
	if err != nil {
		return err
	}
	return writeJSON(w, h)
}
