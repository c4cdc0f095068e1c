package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/prometheus/client_golang/prometheus"
)

const token = "test-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

type fakeBackend struct{ published []string }

func (f *fakeBackend) Identity() api.Identity {
	return api.Identity{PeerID: "12D3KooWtest", Role: "provider"}
}
func (f *fakeBackend) Status() api.Status {
	return api.Status{Role: "provider", PeerID: "12D3KooWtest", Ready: true, RoutingTable: 3, TopicPeers: map[string]int{"idlegrid/rfq/1": 2}}
}
func (f *fakeBackend) Peers() []api.Peer { return nil }
func (f *fakeBackend) PublishDebug(_ context.Context, topic string, data []byte) error {
	if topic != "idlegrid/rfq/1" {
		return errors.New("topic not allowed")
	}
	f.published = append(f.published, string(data))
	return nil
}
func (f *fakeBackend) RecentGossip(string) ([]api.GossipMessage, error) { return nil, nil }
func (f *fakeBackend) Search(_ context.Context, q, _ string, _ int, _ bool) (api.SearchResult, error) {
	if q == "bad" {
		return api.SearchResult{}, api.Errorf(http.StatusBadRequest, api.CodeBadQuery, "query.Parse: column 1: unknown field")
	}
	return api.SearchResult{Query: q, Offers: []api.Offer{{PeerID: "12D3KooWp"}}}, nil
}
func (f *fakeBackend) Provider(context.Context, string) (api.Offer, error) {
	return api.Offer{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no valid capacity record")
}
func (f *fakeBackend) Capacity() (api.Offer, error) { return api.Offer{PeerID: "12D3KooWtest"}, nil }
func (f *fakeBackend) SubmitJob(_ context.Context, spec []byte, opts api.SubmitOptions) (api.Job, error) {
	if !strings.Contains(string(spec), "max_price") {
		return api.Job{}, api.Errorf(http.StatusBadRequest, api.CodeBadSpec, "max_price: required")
	}
	if opts.IdempotencyKey != "" {
		// The key reaches the backend: name the job after it.
		return api.Job{ID: "job-" + opts.IdempotencyKey, State: "auctioning"}, nil
	}
	return api.Job{ID: "bafyjob", State: "auctioning"}, nil
}
func (f *fakeBackend) Jobs() ([]api.Job, error) { return nil, nil }
func (f *fakeBackend) Job(id string) (api.Job, error) {
	if id != "bafyjob" {
		return api.Job{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no job %s", id)
	}
	return api.Job{ID: id, State: "completed"}, nil
}
func (f *fakeBackend) WatchJob(ctx context.Context, id string) (<-chan api.JobEvent, error) {
	ch := make(chan api.JobEvent, 3)
	ch <- api.JobEvent{Kind: "rfq", Message: "published"}
	ch <- api.JobEvent{Kind: "bid", Message: "bid", Bids: 1, BestPriceUSD: 1.5}
	ch <- api.JobEvent{Kind: "completed", Message: "done"}
	close(ch)
	return ch, nil
}
func (f *fakeBackend) Leases() ([]api.Lease, error) { return nil, nil }
func (f *fakeBackend) Prices(time.Duration) (api.Prices, error) {
	return api.Prices{Window: "24h0m0s"}, nil
}

func (f *fakeBackend) JobLogs(_ context.Context, id, _ string, _ bool, w io.Writer) error {
	if id != "job-1" {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "no job %s", id)
	}
	_, err := io.WriteString(w, "line 1\nline 2\n")
	return err
}

func (f *fakeBackend) JobResult(_ context.Context, id, _ string) (api.Result, error) {
	return api.Result{}, api.Errorf(http.StatusConflict, "not_ready", "job %s has no result yet", id)
}

func (f *fakeBackend) CancelJob(_ context.Context, id string) (api.Job, error) {
	return api.Job{ID: id, State: "cancelled"}, nil
}

func (f *fakeBackend) Reputations() ([]api.Reputation, error) {
	return []api.Reputation{{Provider: "12D3KooWp", Score: 0.8, Badge: "none"}}, nil
}

func (f *fakeBackend) Reputation(p string) (api.Reputation, error) {
	return api.Reputation{Provider: p, Score: 0.8, Badge: "none"}, nil
}

func (f *fakeBackend) Reload() (api.Reload, error) {
	return api.Reload{Applied: []string{"provider.floor_usd.gold"}}, nil
}

func (f *fakeBackend) GPUHistory() ([]api.GPUSeries, error) {
	return []api.GPUSeries{{UUID: "GPU-1", Points: []api.GPUPoint{{UtilPct: 50}}}}, nil
}

func (f *fakeBackend) Earnings(since time.Time) (api.Earnings, error) {
	return api.Earnings{Since: since, TotalUSD: 1.5}, nil
}

func (f *fakeBackend) Spend(since time.Time) (api.Spend, error) {
	return api.Spend{Since: since, TotalUSD: 2.5}, nil
}

func (f *fakeBackend) Attestations(_ context.Context, lease string) ([]byte, error) {
	return []byte(`{"version":1,"lease":{"id":"` + lease + `"}}`), nil
}

func (f *fakeBackend) AddArtifact(r io.Reader) (string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("len-%d", len(data)), nil
}

func serve(t *testing.T, debug bool) (*api.Server, *fakeBackend) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "idlegrid_test_total", Help: "test"}))
	b := &fakeBackend{}
	s, err := api.Listen("127.0.0.1:0", b, api.Options{Token: token, Gatherer: reg, Debug: debug})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, b
}

func TestClientRoundTrip(t *testing.T) {
	s, b := serve(t, true)
	c := client.New(s.URL(), token)
	ctx := t.Context()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Ready || st.RoutingTable != 3 || st.TopicPeers["idlegrid/rfq/1"] != 2 {
		t.Fatalf("status %+v", st)
	}
	id, err := c.ID(ctx)
	if err != nil || id.PeerID != "12D3KooWtest" {
		t.Fatalf("id %+v %v", id, err)
	}
	peers, err := c.Peers(ctx)
	if err != nil || peers == nil || len(peers) != 0 {
		t.Fatalf("peers must be an empty list, got %#v %v", peers, err)
	}
	m, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(m, "idlegrid_test_total") {
		t.Fatalf("metrics from the injected registry missing: %v\n%s", err, m)
	}
	if err := c.PublishDebug(ctx, "idlegrid/rfq/1", []byte("x")); err != nil || len(b.published) != 1 {
		t.Fatalf("publish: %v %v", err, b.published)
	}
	var apiErr *api.Error
	if err := c.PublishDebug(ctx, "other", []byte("x")); !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("publish on bad topic: %v", err)
	}
	res, err := c.Search(ctx, "gpu=h100", client.SearchOptions{Limit: 3})
	if err != nil || res.Query != "gpu=h100" || len(res.Offers) != 1 {
		t.Fatalf("search: %+v %v", res, err)
	}
	if _, err := c.Search(ctx, "bad", client.SearchOptions{}); !errors.As(err, &apiErr) || apiErr.Code != api.CodeBadQuery {
		t.Fatalf("bad query must be a bad_query error: %v", err)
	}
	if _, err := c.Provider(ctx, "12D3KooWnope"); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("unknown provider: %v", err)
	}
	if o, err := c.Capacity(ctx); err != nil || o.PeerID != "12D3KooWtest" {
		t.Fatalf("capacity: %+v %v", o, err)
	}
	if _, err := c.SubmitJob(ctx, []byte("gpus: 1\n")); !errors.As(err, &apiErr) || apiErr.Code != api.CodeBadSpec {
		t.Fatalf("bad spec: %v", err)
	}
	var logs strings.Builder
	if err := c.JobLogs(ctx, "job-1", "", true, &logs); err != nil || logs.String() != "line 1\nline 2\n" {
		t.Fatalf("logs: %q %v", logs.String(), err)
	}
	if err := c.JobLogs(ctx, "job-9", "", false, io.Discard); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("logs of an unknown job: %v", err)
	}
	if _, err := c.JobResult(ctx, "job-1", "", io.Discard); !errors.As(err, &apiErr) || apiErr.Code != "not_ready" {
		t.Fatalf("result before the end: %v", err)
	}
	if j, err := c.CancelJob(ctx, "job-1"); err != nil || j.State != "cancelled" {
		t.Fatalf("cancel: %+v %v", j, err)
	}
	if reps, err := c.Reputations(ctx); err != nil || len(reps) != 1 || reps[0].Score != 0.8 {
		t.Fatalf("reputations: %+v %v", reps, err)
	}
	if rep, err := c.Reputation(ctx, "12D3KooWq"); err != nil || rep.Provider != "12D3KooWq" {
		t.Fatalf("reputation: %+v %v", rep, err)
	}
	if e, err := c.Earnings(ctx, 3); err != nil || e.TotalUSD != 1.5 || time.Since(e.Since) < 71*time.Hour {
		t.Fatalf("earnings: %+v %v", e, err)
	}
	if r, err := c.Reload(ctx); err != nil || len(r.Applied) != 1 || r.Applied[0] != "provider.floor_usd.gold" {
		t.Fatalf("reload: %+v %v", r, err)
	}
	if sp, err := c.Spend(ctx, 1); err != nil || sp.TotalUSD != 2.5 {
		t.Fatalf("spend: %+v %v", sp, err)
	}
	var ax strings.Builder
	if err := c.Attestations(ctx, "l1", &ax); err != nil || !strings.Contains(ax.String(), `"l1"`) {
		t.Fatalf("attestations: %q %v", ax.String(), err)
	}
	if id, err := c.AddArtifact(ctx, strings.NewReader("module")); err != nil || id != "len-6" {
		t.Fatalf("add artifact: %q %v", id, err)
	}
	if keyed, err := c.SubmitJobWith(ctx, []byte("max_price: 1\n"), api.SubmitOptions{IdempotencyKey: "k1"}); err != nil || keyed.ID != "job-k1" {
		t.Fatalf("submit with an idempotency key: %+v %v", keyed, err)
	}
	job, err := c.SubmitJob(ctx, []byte("max_price: 1\n"))
	if err != nil || job.ID != "bafyjob" {
		t.Fatalf("submit: %+v %v", job, err)
	}
	var kinds []string
	if err := c.WatchJob(ctx, job.ID, func(ev api.JobEvent) { kinds = append(kinds, ev.Kind) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(kinds, ",") != "rfq,bid,completed" {
		t.Fatalf("watched events %v", kinds)
	}
	if leases, err := c.Leases(ctx); err != nil || leases == nil {
		t.Fatalf("leases must be an empty list: %v %v", leases, err)
	}
	if p, err := c.Prices(ctx, 24*time.Hour); err != nil || p.Window != "24h0m0s" {
		t.Fatalf("prices %+v %v", p, err)
	}
}

func TestRejectsBadAuthAndForeignHosts(t *testing.T) {
	s, _ := serve(t, false)
	tests := []struct {
		name       string
		path       string
		method     string
		host       string
		origin     string
		auth       string
		wantStatus int
		wantCode   string
	}{
		{"missing token", "/v1/status", "GET", "", "", "", 401, api.CodeUnauthorized},
		{"wrong token", "/v1/status", "GET", "", "", "Bearer nope", 401, api.CodeUnauthorized},
		{"basic auth", "/v1/status", "GET", "", "", "Basic " + token, 401, api.CodeUnauthorized},
		{"metrics need token", "/metrics", "GET", "", "", "", 401, api.CodeUnauthorized},
		{"foreign host (DNS rebinding)", "/v1/status", "GET", "evil.example:80", "", "Bearer " + token, 403, api.CodeForbidden},
		{"foreign origin", "/v1/status", "GET", "", "http://evil.example", "Bearer " + token, 403, api.CodeForbidden},
		{"unknown path", "/v1/nope", "GET", "", "", "Bearer " + token, 404, api.CodeNotFound},
		{"wrong method", "/v1/status", "DELETE", "", "", "Bearer " + token, 405, api.CodeMethodNotAllowed},
		{"debug off", "/v1/debug/gossip", "POST", "", "", "Bearer " + token, 404, api.CodeNotFound},
		{"localhost host ok", "/v1/status", "GET", "localhost:" + s.URL()[strings.LastIndex(s.URL(), ":")+1:], "", "Bearer " + token, 200, ""},
		{"same origin ok", "/v1/status", "GET", "", s.URL(), "Bearer " + token, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, s.URL()+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantCode == "" {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var eb api.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error == nil {
				t.Fatalf("error body: %v", err)
			}
			if eb.Error.Code != tc.wantCode || eb.Error.Message == "" {
				t.Fatalf("error %+v, want code %s", eb.Error, tc.wantCode)
			}
		})
	}
}

func TestClientReportsNoDaemon(t *testing.T) {
	s, _ := serve(t, false)
	url := s.URL()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := client.New(url, token).Status(t.Context())
	if !errors.Is(err, client.ErrDaemonNotRunning) {
		t.Fatalf("got %v, want ErrDaemonNotRunning", err)
	}
}

func TestGPUHistoryEndpoint(t *testing.T) {
	s, _ := serve(t, false)
	h, err := client.New(s.URL(), token).GPUHistory(t.Context())
	if err != nil || len(h) != 1 || len(h[0].Points) != 1 {
		t.Fatalf("GPU history %+v, %v: want the backend's one series", h, err)
	}
}
