package api_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/endpoint"
)

// endpointFake is a backend with service endpoints, one per job.
type endpointFake struct {
	*fakeBackend
	mu sync.Mutex
	es map[string]api.Endpoint
}

func (f *endpointFake) StartEndpoint(job string, req api.EndpointRequest) (api.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.es[job]; ok {
		return api.Endpoint{}, api.Errorf(http.StatusConflict, "conflict", "job %s already has an endpoint", job)
	}
	e := api.Endpoint{Job: job, Port: req.Port, Listen: "127.0.0.1:41000",
		Total:    api.EndpointStats{Stats: endpoint.Stats{Requests: 3, PromptTokens: 10, CompletionTokens: 20}, SpentUSD: 0.03, USDPerMTok: 1000},
		Replicas: []api.EndpointReplica{{Lease: "l1", Slot: 0, Live: true}}}
	f.es[job] = e
	return e, nil
}

func (f *endpointFake) StopEndpoint(job string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.es[job]; !ok {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "job %s has no endpoint", job)
	}
	delete(f.es, job)
	return nil
}

func (f *endpointFake) ServiceEndpoint(job string) (api.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.es[job]
	if !ok {
		return api.Endpoint{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "job %s has no endpoint", job)
	}
	return e, nil
}

func TestEndpointRoutes(t *testing.T) {
	c := serveBackend(t, &endpointFake{fakeBackend: &fakeBackend{}, es: map[string]api.Endpoint{}})
	ctx := t.Context()
	e, err := c.StartEndpoint(ctx, "job1", api.EndpointRequest{Listen: "127.0.0.1:0", Port: 8080})
	if err != nil || e.Port != 8080 || e.Job != "job1" {
		t.Fatalf("start: %+v %v", e, err)
	}
	var ae *api.Error
	if _, err := c.StartEndpoint(ctx, "job1", api.EndpointRequest{Port: 8080}); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("second start: %v", err)
	}
	if _, err := c.StartEndpoint(ctx, "job2", api.EndpointRequest{}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("port 0: %v", err)
	}
	got, err := c.Endpoint(ctx, "job1")
	if err != nil || got.Total.Tokens() != 30 || got.Total.USDPerMTok != 1000 || len(got.Replicas) != 1 || !got.Replicas[0].Live {
		t.Errorf("get: %+v %v", got, err)
	}
	if err := c.StopEndpoint(ctx, "job1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Endpoint(ctx, "job1"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("after stop: %v", err)
	}
	// A backend without endpoints answers 404.
	plain := serveBackend(t, &fakeBackend{})
	if _, err := plain.Endpoint(ctx, "job1"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("plain backend: %v", err)
	}
}
