package client

import (
	"context"
	"net/http"

	"github.com/idlegrid/idlegrid/node/api"
)

// Reload makes the daemon re-read config.toml (as SIGHUP does).
func (c *Client) Reload(ctx context.Context) (api.Reload, error) {
	var out api.Reload
	err := c.do(ctx, http.MethodPost, "/v1/reload", nil, nil, &out)
	return out, err
}
