package api

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ForwardBackend serves a renter's service forwards. A Backend that does
// not implement it answers the forward routes with 404.
type ForwardBackend interface {
	// StartForward forwards a local address to a service job's port.
	StartForward(job string, req ForwardRequest) (Forward, error)
	// StopForward ends the forward of a job's port.
	StopForward(job string, port uint16) error
	// Forwards lists a job's forwards with their stats.
	Forwards(job string) ([]Forward, error)
}

// maxForwardBody bounds a ForwardRequest.
const maxForwardBody = 4 << 10

func (s *Server) forwardBackend() (ForwardBackend, error) {
	fb, ok := s.b.(ForwardBackend)
	if !ok {
		return nil, Errorf(http.StatusNotFound, CodeNotFound, "this node forwards no services")
	}
	return fb, nil
}

func (s *Server) postForward(w http.ResponseWriter, r *http.Request) error {
	fb, err := s.forwardBackend()
	if err != nil {
		return err
	}
	var req ForwardRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxForwardBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "forward request: %v", err)
	}
	if req.Port == 0 {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "forward request: port is required")
	}
	f, err := fb.StartForward(r.PathValue("id"), req)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	return json.NewEncoder(w).Encode(f)
}

func (s *Server) getForwards(w http.ResponseWriter, r *http.Request) error {
	fb, err := s.forwardBackend()
	if err != nil {
		return err
	}
	fs, err := fb.Forwards(r.PathValue("id"))
	if err != nil {
		return err
	}
	if fs == nil {
		fs = []Forward{}
	}
	return writeJSON(w, fs)
}

func (s *Server) deleteForward(w http.ResponseWriter, r *http.Request) error {
	fb, err := s.forwardBackend()
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(r.PathValue("port"), 10, 16)
	if err != nil || port == 0 {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "port %q: want 1..65535", r.PathValue("port"))
	}
	if err := fb.StopForward(r.PathValue("id"), uint16(port)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
