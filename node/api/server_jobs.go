package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"
)

// maxArtifactBody caps an uploaded artifact (a WASM module).
const maxArtifactBody = 64 << 20

// getJobLogs streams a job's log as text; ?follow=1 keeps streaming until
// the work ends.
func (s *Server) getJobLogs(w http.ResponseWriter, r *http.Request) error {
	follow, _ := strconv.ParseBool(r.URL.Query().Get("follow"))
	fw := NewFlushWriter(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	err := s.b.JobLogs(r.Context(), r.PathValue("id"), r.URL.Query().Get("lease"), follow, fw)
	if err != nil && !fw.Wrote() {
		return err
	}
	if err != nil {
		// Headers are gone: the client sees a cut stream.
		s.log.Debug("job logs ended with an error", "job", r.PathValue("id"), "err", err)
	}
	return nil
}

// getJobResult serves a job's verified output tar. Ranges are honoured, so
// a client can resume too.
func (s *Server) getJobResult(w http.ResponseWriter, r *http.Request) error {
	res, err := s.b.JobResult(r.Context(), r.PathValue("id"), r.URL.Query().Get("lease"))
	if err != nil {
		return err
	}
	f, err := os.Open(res.Path)
	if err != nil {
		return Errorf(http.StatusInternalServerError, CodeInternal, "open result: %v", err)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set(HeaderCID, res.CID)
	w.Header().Set(HeaderLease, res.Lease)
	w.Header().Set("Content-Disposition", `attachment; filename="`+res.CID+`.tar"`)
	w.Header().Set("ETag", `"`+res.CID+`"`)
	http.ServeContent(w, r, res.CID+".tar", time.Time{}, f)
	return nil
}

func (s *Server) postJobCancel(w http.ResponseWriter, r *http.Request) error {
	job, err := s.b.CancelJob(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, job)
}

func (s *Server) postArtifact(w http.ResponseWriter, r *http.Request) error {
	id, err := s.b.AddArtifact(http.MaxBytesReader(w, r.Body, maxArtifactBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return Errorf(http.StatusRequestEntityTooLarge, CodeBadRequest, "artifact over %d MiB", maxArtifactBody>>20)
		}
		return Errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	return json.NewEncoder(w).Encode(Artifact{CID: id})
}

func (s *Server) getReputations(w http.ResponseWriter, _ *http.Request) error {
	reps, err := s.b.Reputations()
	if err != nil {
		return err
	}
	if reps == nil {
		reps = []Reputation{}
	}
	return writeJSON(w, reps)
}

func (s *Server) getReputation(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.b.Reputation(r.PathValue("peer"))
	if err != nil {
		return err
	}
	return writeJSON(w, rep)
}

// sinceParam reads ?days=N (default 7) as a start time.
func sinceParam(r *http.Request) (time.Time, error) {
	days := 7
	if v := r.URL.Query().Get("days"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 1 || d > 3660 {
			return time.Time{}, Errorf(http.StatusBadRequest, CodeBadRequest, "days=%q: want a whole number of days, 1..3660", v)
		}
		days = d
	}
	return time.Now().AddDate(0, 0, -days), nil
}

func (s *Server) getEarnings(w http.ResponseWriter, r *http.Request) error {
	since, err := sinceParam(r)
	if err != nil {
		return err
	}
	e, err := s.b.Earnings(since)
	if err != nil {
		return err
	}
	return writeJSON(w, e)
}

func (s *Server) getSpend(w http.ResponseWriter, r *http.Request) error {
	since, err := sinceParam(r)
	if err != nil {
		return err
	}
	sp, err := s.b.Spend(since)
	if err != nil {
		return err
	}
	return writeJSON(w, sp)
}

func (s *Server) getAttestations(w http.ResponseWriter, r *http.Request) error {
	b, err := s.b.Attestations(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(b)
	return err
}
