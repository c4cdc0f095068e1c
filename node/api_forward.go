package node

import (
	"errors"
	"net/http"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/renter"
	"github.com/idlegrid/idlegrid/store"
)

var _ api.ForwardBackend = apiBackend{}

// StartForward implements api.ForwardBackend.
func (b apiBackend) StartForward(job string, req api.ForwardRequest) (api.Forward, error) {
	if b.n.renter == nil {
		return api.Forward{}, b.renterOnly()
	}
	job, err := b.jobID(job)
	if err != nil {
		return api.Forward{}, err
	}
	f, err := b.n.renter.StartForward(job, req.Listen, req.Port)
	return apiForward(f), forwardError(err, job, req.Port)
}

// StopForward implements api.ForwardBackend.
func (b apiBackend) StopForward(job string, port uint16) error {
	if b.n.renter == nil {
		return b.renterOnly()
	}
	job, err := b.jobID(job)
	if err != nil {
		return err
	}
	return forwardError(b.n.renter.StopForward(job, port), job, port)
}

// Forwards implements api.ForwardBackend.
func (b apiBackend) Forwards(job string) ([]api.Forward, error) {
	if b.n.renter == nil {
		return nil, b.renterOnly()
	}
	job, err := b.jobID(job)
	if err != nil {
		return nil, err
	}
	return apiForwards(b.n.renter.Forwards(job)), nil
}

// apiForward is a renter's forward as the API shows it.
func apiForward(f renter.Forward) api.Forward {
	return api.Forward{Job: f.Job, Port: f.Port, Listen: f.Listen, Stats: f.Stats}
}

// apiForwards converts a job's forwards; none is nil, as before.
func apiForwards(fs []renter.Forward) []api.Forward {
	var out []api.Forward
	for _, f := range fs {
		out = append(out, apiForward(f))
	}
	return out
}

// forwardError says what went wrong with a job's forward of port in the
// user's terms.
func forwardError(err error, job string, port uint16) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, renter.ErrNotService):
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "job %s exposes no port %d: a service job lists its container ports under ports: in its spec", lease.Short(job), port)
	case errors.Is(err, renter.ErrForwardExists):
		return api.Errorf(http.StatusConflict, "conflict", "job %s port %d is already forwarded (idlegrid job status %s lists its forwards)", lease.Short(job), port, lease.Short(job))
	case errors.Is(err, renter.ErrJobEnded):
		return api.Errorf(http.StatusConflict, "conflict", "job %s has ended: there is nothing to forward to", lease.Short(job))
	case errors.Is(err, store.ErrNotFound):
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "job %s has no forward to port %d", lease.Short(job), port)
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return err
	}
	if e := jobError(err); e != nil {
		var ae *api.Error
		if errors.As(e, &ae) && ae.Status != http.StatusBadGateway {
			return e
		}
	}
	// Listening failed (address in use, bad address): the caller's to fix.
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "%v", err)
}
