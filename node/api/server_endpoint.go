package api

import (
	"encoding/json"
	"net/http"
)

// EndpointBackend serves a renter's service endpoints. A Backend that
// does not implement it answers the endpoint routes with 404.
type EndpointBackend interface {
	// StartEndpoint serves a service job's port on one local address.
	StartEndpoint(job string, req EndpointRequest) (Endpoint, error)
	// StopEndpoint ends a job's endpoint.
	StopEndpoint(job string) error
	// ServiceEndpoint is a job's endpoint with its stats.
	ServiceEndpoint(job string) (Endpoint, error)
}

func (s *Server) endpointBackend() (EndpointBackend, error) {
	eb, ok := s.b.(EndpointBackend)
	if !ok {
		return nil, Errorf(http.StatusNotFound, CodeNotFound, "this node serves no service endpoints")
	}
	return eb, nil
}

func (s *Server) postEndpoint(w http.ResponseWriter, r *http.Request) error {
	eb, err := s.endpointBackend()
	if err != nil {
		return err
	}
	var req EndpointRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxForwardBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "endpoint request: %v", err)
	}
	if req.Port == 0 {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "endpoint request: port is required")
	}
	e, err := eb.StartEndpoint(r.PathValue("id"), req)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	return json.NewEncoder(w).Encode(e)
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) error {
	eb, err := s.endpointBackend()
	if err != nil {
		return err
	}
	e, err := eb.ServiceEndpoint(r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, e)
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request) error {
	eb, err := s.endpointBackend()
	if err != nil {
		return err
	}
	if err := eb.StopEndpoint(r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
