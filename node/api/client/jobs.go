package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// SubmitJob posts a YAML job spec; the daemon validates it and starts the
// auction. A bad spec is an *api.Error with code bad_spec.
func (c *Client) SubmitJob(ctx context.Context, specYAML []byte) (api.Job, error) {
	return c.SubmitJobWith(ctx, specYAML, api.SubmitOptions{})
}

// SubmitJobWith is SubmitJob with options: with an idempotency key, a
// retry of a submit whose answer was lost returns the same job.
func (c *Client) SubmitJobWith(ctx context.Context, specYAML []byte, opts api.SubmitOptions) (api.Job, error) {
	var hdr http.Header
	if opts.IdempotencyKey != "" {
		hdr = http.Header{}
		hdr.Set(api.IdempotencyKeyHeader, opts.IdempotencyKey)
	}
	var out api.Job
	err := c.doHeader(ctx, http.MethodPost, "/v1/jobs", nil, hdr, specYAML, &out)
	return out, err
}

// Jobs lists the daemon's jobs.
func (c *Client) Jobs(ctx context.Context) ([]api.Job, error) {
	var out []api.Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs", nil, nil, &out)
	return out, err
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (api.Job, error) {
	var out api.Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// Leases lists the daemon's leases.
func (c *Client) Leases(ctx context.Context) ([]api.Lease, error) {
	var out []api.Lease
	err := c.do(ctx, http.MethodGet, "/v1/leases", nil, nil, &out)
	return out, err
}

// Prices returns the market price index over a window.
func (c *Client) Prices(ctx context.Context, window time.Duration) (api.Prices, error) {
	var out api.Prices
	err := c.do(ctx, http.MethodGet, "/v1/market/prices", url.Values{"window": {window.String()}}, nil, &out)
	return out, err
}

// WatchJob follows a job's server-sent events, calling fn for each, until
// the job is terminal (nil) or ctx ends.
func (c *Client) WatchJob(ctx context.Context, id string, fn func(api.JobEvent)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/jobs/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		return fmt.Errorf("client: watch job: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	// No overall timeout: the stream lasts as long as the job's auction.
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		if isConnRefused(err) {
			return fmt.Errorf("%w at %s", ErrDaemonNotRunning, strings.TrimPrefix(c.base, "http://"))
		}
		return fmt.Errorf("client: watch job: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var eb api.ErrorBody
		if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error == nil {
			return &api.Error{Status: resp.StatusCode, Code: "http", Message: resp.Status}
		}
		eb.Error.Status = resp.StatusCode
		return eb.Error
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev api.JobEvent
		if err := json.NewDecoder(bytes.NewReader([]byte(data))).Decode(&ev); err != nil {
			return fmt.Errorf("client: watch job: bad event: %w", err)
		}
		fn(ev)
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("client: watch job: %w", err)
	}
	return ctx.Err()
}
