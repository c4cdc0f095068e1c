package node

import (
	"errors"
	"net/http"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/renter"
	"github.com/idlegrid/idlegrid/store"
)

var _ api.EndpointBackend = apiBackend{}

// StartEndpoint implements api.EndpointBackend.
func (b apiBackend) StartEndpoint(job string, req api.EndpointRequest) (api.Endpoint, error) {
	if b.n.renter == nil {
		return api.Endpoint{}, b.renterOnly()
	}
	job, err := b.jobID(job)
	if err != nil {
		return api.Endpoint{}, err
	}
	e, err := b.n.renter.StartEndpoint(job, req.Listen, req.Port)
	if errors.Is(err, renter.ErrEndpointExists) {
		return api.Endpoint{}, api.Errorf(http.StatusConflict, "conflict", "job %s already has an endpoint (idlegrid job status %s shows it)", lease.Short(job), lease.Short(job))
	}
	return apiEndpoint(e), forwardError(err, job, req.Port)
}

// StopEndpoint implements api.EndpointBackend.
func (b apiBackend) StopEndpoint(job string) error {
	if b.n.renter == nil {
		return b.renterOnly()
	}
	job, err := b.jobID(job)
	if err != nil {
		return err
	}
	if err := b.n.renter.StopEndpoint(job); errors.Is(err, store.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "job %s has no endpoint", lease.Short(job))
	} else if err != nil {
		return err
	}
	return nil
}

// ServiceEndpoint implements api.EndpointBackend.
func (b apiBackend) ServiceEndpoint(job string) (api.Endpoint, error) {
	if b.n.renter == nil {
		return api.Endpoint{}, b.renterOnly()
	}
	job, err := b.jobID(job)
	if err != nil {
		return api.Endpoint{}, err
	}
	e, ok := b.n.renter.ServiceEndpoint(job)
	if !ok {
		return api.Endpoint{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "job %s has no endpoint (start one with idlegrid job endpoint %s PORT)", lease.Short(job), lease.Short(job))
	}
	return apiEndpoint(e), nil
}

// apiEndpoint is a renter's endpoint as the API shows it.
func apiEndpoint(e renter.Endpoint) api.Endpoint {
	out := api.Endpoint{Job: e.Job, Port: e.Port, Listen: e.Listen,
		Total: api.EndpointStats{Stats: e.Total.Stats, SpentUSD: e.Total.SpentUSD, USDPerMTok: e.Total.USDPerMTok}}
	for _, r := range e.Replicas {
		out.Replicas = append(out.Replicas, api.EndpointReplica{Lease: r.Lease, Slot: r.Slot, Provider: r.Provider, Live: r.Live,
			EndpointStats: api.EndpointStats{Stats: r.Stats, SpentUSD: r.SpentUSD, USDPerMTok: r.USDPerMTok}})
	}
	return out
}
