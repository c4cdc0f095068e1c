// Package client is the typed Go client of the node's local HTTP API. The
// CLI and the tests talk to a daemon only through it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// ErrDaemonNotRunning means nothing answered at the API address.
var ErrDaemonNotRunning = errors.New("no idlegrid daemon is running")

// maxResponse bounds any API response the client will read.
const maxResponse = 16 << 20

// Client calls one daemon's API.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// New returns a client for the API at baseURL (http://127.0.0.1:7402).
func New(baseURL, token string) *Client {
	return &Client{
		base:  strings.TrimRight(baseURL, "/"),
		token: token,
		hc:    &http.Client{Timeout: 30 * time.Second},
	}
}

// BaseURL is the API's base URL.
func (c *Client) BaseURL() string { return c.base }

// ID returns the daemon's identity.
func (c *Client) ID(ctx context.Context) (api.Identity, error) {
	var out api.Identity
	err := c.do(ctx, http.MethodGet, "/v1/id", nil, nil, &out)
	return out, err
}

// Status returns the daemon's status.
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var out api.Status
	err := c.do(ctx, http.MethodGet, "/v1/status", nil, nil, &out)
	return out, err
}

// Peers lists connected peers.
func (c *Client) Peers(ctx context.Context) ([]api.Peer, error) {
	var out []api.Peer
	err := c.do(ctx, http.MethodGet, "/v1/peers", nil, nil, &out)
	return out, err
}

// Metrics returns the Prometheus text exposition.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var buf bytes.Buffer
	err := c.do(ctx, http.MethodGet, "/metrics", nil, nil, &buf)
	return buf.String(), err
}

// PublishDebug publishes raw bytes on a topic (daemon needs api.debug).
func (c *Client) PublishDebug(ctx context.Context, topic string, data []byte) error {
	return c.do(ctx, http.MethodPost, "/v1/debug/gossip", url.Values{"topic": {topic}}, data, nil)
}

// RecentGossip lists recent messages received on a topic (api.debug).
func (c *Client) RecentGossip(ctx context.Context, topic string) ([]api.GossipMessage, error) {
	var out []api.GossipMessage
	err := c.do(ctx, http.MethodGet, "/v1/debug/gossip", url.Values{"topic": {topic}}, nil, &out)
	return out, err
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	return c.doHeader(ctx, method, path, q, nil, body, out)
}

// doHeader is do with extra request headers.
func (c *Client) doHeader(ctx context.Context, method, path string, q url.Values, hdr http.Header, body []byte, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		if isConnRefused(err) {
			return fmt.Errorf("%w at %s", ErrDaemonNotRunning, strings.TrimPrefix(c.base, "http://"))
		}
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		lr := io.LimitReader(resp.Body, maxResponse)
		var eb api.ErrorBody
		if err := json.NewDecoder(lr).Decode(&eb); err != nil || eb.Error == nil {
			return &api.Error{Status: resp.StatusCode, Code: "http", Message: resp.Status}
		}
		eb.Error.Status = resp.StatusCode
		return eb.Error
	}
	if out == nil {
		return nil
	}
	// Read one byte past the limit, so a response over it is named as
	// such rather than failing to decode as a truncated one.
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("client: %s %s: read response: %w", method, path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("client: %s %s: %w (over %d MiB)", method, path, ErrResponseTooLarge, maxResponse>>20)
	}
	switch o := out.(type) {
	case *bytes.Buffer:
		_, err = o.Write(data)
	default:
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		return fmt.Errorf("client: %s %s: decode response: %w", method, path, err)
	}
	return nil
}

// ErrResponseTooLarge is returned for an API response larger than the
// client reads.
var ErrResponseTooLarge = errors.New("response too large")

func isConnRefused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

// SearchOptions shape a market search.
type SearchOptions struct {
	Sort    string
	Limit   int
	Explain bool
}

// Search runs a market query on the daemon.
func (c *Client) Search(ctx context.Context, q string, o SearchOptions) (api.SearchResult, error) {
	v := url.Values{"q": {q}}
	if o.Sort != "" {
		v.Set("sort", o.Sort)
	}
	if o.Limit > 0 {
		v.Set("limit", fmt.Sprint(o.Limit))
	}
	if o.Explain {
		v.Set("explain", "true")
	}
	var out api.SearchResult
	err := c.do(ctx, http.MethodGet, "/v1/market/search", v, nil, &out)
	return out, err
}

// Provider returns one provider's verified offer.
func (c *Client) Provider(ctx context.Context, peerID string) (api.Offer, error) {
	var out api.Offer
	err := c.do(ctx, http.MethodGet, "/v1/market/providers/"+url.PathEscape(peerID), nil, nil, &out)
	return out, err
}

// Capacity returns the daemon's own current offer (providers only).
func (c *Client) Capacity(ctx context.Context) (api.Offer, error) {
	var out api.Offer
	err := c.do(ctx, http.MethodGet, "/v1/capacity", nil, nil, &out)
	return out, err
}
