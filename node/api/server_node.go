package api

import (
	"net/http"
)

// ArtifactBackend lists the artifacts a renter serves. A Backend that does
// not implement it answers GET /v1/artifacts with 404.
type ArtifactBackend interface {
	// Artifacts lists the stored artifacts, newest first.
	Artifacts() ([]Artifact, error)
}

// ConfigBackend gives the node's effective configuration: config.toml
// with the environment and the daemon's flags applied, as TOML. The
// doctor reads it, so it checks what runs rather than what the file says.
// A Backend that does not implement it answers GET /v1/config with 404.
type ConfigBackend interface {
	EffectiveConfig() ([]byte, error)
}

func (s *Server) getArtifacts(w http.ResponseWriter, _ *http.Request) error {
	ab, ok := s.b.(ArtifactBackend)
	if !ok {
		return Errorf(http.StatusNotFound, CodeNotFound, "this node keeps no artifacts")
	}
	list, err := ab.Artifacts()
	if err != nil {
		return err
	}
	if list == nil {
		list = []Artifact{}
	}
	return writeJSON(w, list)
}

func (s *Server) getConfig(w http.ResponseWriter, _ *http.Request) error {
	cb, ok := s.b.(ConfigBackend)
	if !ok {
		return Errorf(http.StatusNotFound, CodeNotFound, "this node does not show its configuration")
	}
	text, err := cb.EffectiveConfig()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/toml; charset=utf-8")
	_, err = w.Write(text)
	return err
}
