package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/idlegrid/idlegrid/node/api"
)

// StartEndpoint serves a service job's port on one local address of the
// renter node, balanced over the job's replicas (see api.EndpointRequest).
func (c *Client) StartEndpoint(ctx context.Context, job string, req api.EndpointRequest) (api.Endpoint, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.Endpoint{}, err
	}
	var out api.Endpoint
	err = c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/endpoint", nil, body, &out)
	return out, err
}

// Endpoint is a job's endpoint with its stats per replica and service.
func (c *Client) Endpoint(ctx context.Context, job string) (api.Endpoint, error) {
	var out api.Endpoint
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(job)+"/endpoint", nil, nil, &out)
	return out, err
}

// StopEndpoint ends a job's endpoint.
func (c *Client) StopEndpoint(ctx context.Context, job string) error {
	return c.do(ctx, http.MethodDelete, "/v1/jobs/"+url.PathEscape(job)+"/endpoint", nil, nil, nil)
}
