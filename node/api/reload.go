package api

import "net/http"

// Reload is POST /v1/reload: the config keys that changed, split into
// those applied live and those that take effect at the next restart.
type Reload struct {
	Applied []string `json:"applied"`
	Restart []string `json:"restart"`
}

func (s *Server) postReload(w http.ResponseWriter, _ *http.Request) error {
	r, err := s.b.Reload()
	if err != nil {
		return err
	}
	return writeJSON(w, r)
}
