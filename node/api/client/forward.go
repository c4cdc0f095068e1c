package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/idlegrid/idlegrid/node/api"
)

// StartForward forwards a local address on the renter node to a service
// job's container port (see api.ForwardRequest).
func (c *Client) StartForward(ctx context.Context, job string, req api.ForwardRequest) (api.Forward, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.Forward{}, err
	}
	var out api.Forward
	err = c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/forwards", nil, body, &out)
	return out, err
}

// Forwards lists a job's forwards with their stats.
func (c *Client) Forwards(ctx context.Context, job string) ([]api.Forward, error) {
	var out []api.Forward
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(job)+"/forwards", nil, nil, &out)
	return out, err
}

// StopForward ends the forward of a job's port.
func (c *Client) StopForward(ctx context.Context, job string, port uint16) error {
	return c.do(ctx, http.MethodDelete, "/v1/jobs/"+url.PathEscape(job)+"/forwards/"+strconv.Itoa(int(port)), nil, nil, nil)
}
