package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
)

// stream sends a request whose answer is streamed (no overall timeout):
// the caller reads and closes the body of a 2xx response; any other status
// is returned as the API's error.
func (c *Client) stream(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		if isConnRefused(err) {
			return nil, fmt.Errorf("%w at %s", ErrDaemonNotRunning, strings.TrimPrefix(c.base, "http://"))
		}
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var eb api.ErrorBody
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&eb); err != nil || eb.Error == nil {
			return nil, &api.Error{Status: resp.StatusCode, Code: "http", Message: resp.Status}
		}
		eb.Error.Status = resp.StatusCode
		return nil, eb.Error
	}
	return resp, nil
}

// JobLogs copies a job's log to w (of lease, or of the job's latest
// lease); with follow, until the work ends or ctx ends.
func (c *Client) JobLogs(ctx context.Context, id, lease string, follow bool, w io.Writer) error {
	q := url.Values{}
	if lease != "" {
		q.Set("lease", lease)
	}
	if follow {
		q.Set("follow", "1")
	}
	resp, err := c.stream(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/logs", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil && ctx.Err() == nil {
		return fmt.Errorf("client: job logs: %w", err)
	}
	return ctx.Err()
}

// JobResult copies a finished job's output tar to w and checks it against
// the CID the daemon verified it with.
func (c *Client) JobResult(ctx context.Context, id, lease string, w io.Writer) (api.Result, error) {
	q := url.Values{}
	if lease != "" {
		q.Set("lease", lease)
	}
	resp, err := c.stream(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/result", q, nil)
	if err != nil {
		return api.Result{}, err
	}
	defer resp.Body.Close()
	res := api.Result{CID: resp.Header.Get(api.HeaderCID), Lease: resp.Header.Get(api.HeaderLease)}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), resp.Body)
	if err != nil {
		return res, fmt.Errorf("client: job result: %w", err)
	}
	res.Size = n
	want, err := cid.Decode(res.CID)
	if err != nil {
		return res, fmt.Errorf("client: job result: bad CID header %q: %w", res.CID, err)
	}
	sum, err := mh.Encode(h.Sum(nil), mh.SHA2_256)
	if err != nil {
		return res, err
	}
	if got := cid.NewCidV1(cid.Raw, sum); !got.Equals(want) {
		return res, fmt.Errorf("client: job result: got %s, want %s: %w", got, want, ErrCIDMismatch)
	}
	return res, nil
}

// ErrCIDMismatch is returned when downloaded bytes do not hash to their CID.
var ErrCIDMismatch = fmt.Errorf("content does not match its CID")

// CancelJob stops a job's auction or work.
func (c *Client) CancelJob(ctx context.Context, id string) (api.Job, error) {
	var out api.Job
	err := c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/cancel", nil, []byte{}, &out)
	return out, err
}

// AddArtifact uploads an artifact (a WASM module) and returns its CID.
func (c *Client) AddArtifact(ctx context.Context, r io.Reader) (string, error) {
	resp, err := c.stream(ctx, http.MethodPost, "/v1/artifacts", nil, r)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var a api.Artifact
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&a); err != nil {
		return "", fmt.Errorf("client: add artifact: %w", err)
	}
	return a.CID, nil
}

// Reputations lists the providers this node has evidence about.
func (c *Client) Reputations(ctx context.Context) ([]Reputation, error) {
	var out []Reputation
	err := c.do(ctx, http.MethodGet, "/v1/reputation", nil, nil, &out)
	return out, err
}

// Reputation scores one provider.
func (c *Client) Reputation(ctx context.Context, peerID string) (Reputation, error) {
	var out Reputation
	err := c.do(ctx, http.MethodGet, "/v1/reputation/"+url.PathEscape(peerID), nil, nil, &out)
	return out, err
}

// Reputation is api.Reputation.
type Reputation = api.Reputation

// Earnings is a provider's income over the last days.
func (c *Client) Earnings(ctx context.Context, days int) (api.Earnings, error) {
	var out api.Earnings
	err := c.do(ctx, http.MethodGet, "/v1/earnings", url.Values{"days": {fmt.Sprint(days)}}, nil, &out)
	return out, err
}

// GPUHistory is a provider's per-GPU telemetry over the last hour.
func (c *Client) GPUHistory(ctx context.Context) ([]api.GPUSeries, error) {
	var out []api.GPUSeries
	err := c.do(ctx, http.MethodGet, "/v1/gpus/history", nil, nil, &out)
	return out, err
}

// Spend is a renter's spending over the last days.
func (c *Client) Spend(ctx context.Context, days int) (api.Spend, error) {
	var out api.Spend
	err := c.do(ctx, http.MethodGet, "/v1/spend", url.Values{"days": {fmt.Sprint(days)}}, nil, &out)
	return out, err
}

// Attestations writes the export of a lease's attestations to w.
func (c *Client) Attestations(ctx context.Context, lease string, w io.Writer) error {
	resp, err := c.stream(ctx, http.MethodGet, "/v1/leases/"+url.PathEscape(lease)+"/attestations", nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// Artifacts lists the artifacts (WASM modules) a renter serves, newest
// first.
func (c *Client) Artifacts(ctx context.Context) ([]api.Artifact, error) {
	var out []api.Artifact
	err := c.do(ctx, http.MethodGet, "/v1/artifacts", nil, nil, &out)
	return out, err
}

// Config returns the daemon's effective configuration as TOML: its
// config.toml with the environment and its flags applied.
func (c *Client) Config(ctx context.Context) ([]byte, error) {
	var buf bytes.Buffer
	err := c.do(ctx, http.MethodGet, "/v1/config", nil, nil, &buf)
	return buf.Bytes(), err
}
