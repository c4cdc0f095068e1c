package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Backend is what the API serves. The node implements it; the API never
// reaches into the node otherwise.
type Backend interface {
	Identity() Identity
	Status() Status
	Peers() []Peer
	// PublishDebug publishes raw bytes on a gossip topic.
	PublishDebug(ctx context.Context, topic string, data []byte) error
	// RecentGossip returns the latest messages received on a topic.
	RecentGossip(topic string) ([]GossipMessage, error)
	// Search runs a market query; a malformed query returns an *Error.
	Search(ctx context.Context, q, sort string, limit int, explain bool) (SearchResult, error)
	// Provider returns one provider's verified offer.
	Provider(ctx context.Context, peerID string) (Offer, error)
	// Capacity returns this provider's own current offer.
	Capacity() (Offer, error)
	// SubmitJob validates a YAML job spec and starts its auction.
	// Each submit is a new job, except one whose idempotency key an
	// earlier job holds: that job is returned.
	SubmitJob(ctx context.Context, spec []byte, opts SubmitOptions) (Job, error)
	// Jobs lists the renter's jobs, newest first.
	Jobs() ([]Job, error)
	// Job returns one job.
	Job(id string) (Job, error)
	// WatchJob streams a job's events, past ones first, until the job is
	// terminal (the channel closes) or ctx ends.
	WatchJob(ctx context.Context, id string) (<-chan JobEvent, error)
	// Leases lists this node's leases (as renter or provider).
	Leases() ([]Lease, error)
	// Prices computes the market price index over a window.
	Prices(window time.Duration) (Prices, error)
	// JobLogs writes a job's log (of lease, or of its latest lease) to w
	// from its start; with follow, until the work ends or ctx ends.
	JobLogs(ctx context.Context, id, lease string, follow bool, w io.Writer) error
	// JobResult fetches a finished job's output tar (of lease, or of its
	// latest lease with outputs) from its provider into the node's cache,
	// verified against its CID, resuming an interrupted download.
	JobResult(ctx context.Context, id, lease string) (Result, error)
	// CancelJob stops a job's auction or work.
	CancelJob(ctx context.Context, id string) (Job, error)
	// AddArtifact stores an artifact (a WASM module) for this renter's
	// jobs and returns its CID.
	AddArtifact(r io.Reader) (string, error)
	// Reputations lists every provider this node has evidence about;
	// Reputation scores one (the prior when there is none).
	Reputations() ([]Reputation, error)
	Reputation(peer string) (Reputation, error)
	// Earnings (providers) and Spend (renters) sum paid vouchers since a
	// time.
	Earnings(since time.Time) (Earnings, error)
	// GPUHistory is a provider's per-GPU telemetry over the last hour, as
	// its sampler read it (the dashboard's charts).
	GPUHistory() ([]GPUSeries, error)
	Spend(since time.Time) (Spend, error)
	// Attestations exports the signed chain entries attesting a lease.
	Attestations(ctx context.Context, lease string) ([]byte, error)
	// Reload re-reads config.toml, applies the keys that can change live
	// and names those that need a restart (also on SIGHUP).
	Reload() (Reload, error)
}

// Options configure the server.
type Options struct {
	// Token is the bearer token every request must carry.
	Token string
	// Gatherer backs /metrics; nil serves an empty registry.
	Gatherer prometheus.Gatherer
	// Debug enables /v1/debug/* endpoints.
	Debug bool
	// Logger; nil discards.
	Logger *slog.Logger
	// UI, when set, is served under /ui/ (the dashboard, package node/ui).
	// The Host and Origin checks apply to it as to every route, but not
	// the bearer token: a browser cannot send one, so the UI signs its
	// users in with the token once and keeps a session cookie.
	UI http.Handler
}

const (
	maxDebugBody = 1 << 20
	maxSpecBody  = 64 << 10
)

// Server is the HTTP API bound to a listener.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	opts Options
	b    Backend
	log  *slog.Logger
	// hosts are the Host header values we answer to.
	hosts map[string]bool
}

// Listen binds addr (host:port; port 0 picks one) and prepares the server.
func Listen(addr string, b Backend, opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("api.Listen: empty token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api.Listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, opts: opts, b: b, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hosts = allowedHosts(ln.Addr().(*net.TCPAddr))
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

func allowedHosts(a *net.TCPAddr) map[string]bool {
	port := fmt.Sprint(a.Port)
	hosts := map[string]bool{net.JoinHostPort(a.IP.String(), port): true}
	if a.IP.IsLoopback() || a.IP.IsUnspecified() {
		for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
			hosts[net.JoinHostPort(h, port)] = true
		}
	}
	return hosts
}

// URL is the base URL of the bound server.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Serve serves until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("api: serve: %w", err)
	case <-ctx.Done():
	}
	return s.Close()
}

// Close stops the server, waiting briefly for requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	// Shutdown closes the listener only if Serve already runs; a server
	// closed before that must not leave the port accepting connections.
	_ = s.ln.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("api: shutdown: %w", err)
	}
	return nil
}

type handler func(w http.ResponseWriter, r *http.Request) error

// Handler is the API's http.Handler with every check in front.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	routes := map[string]handler{
		"GET /v1/id":     s.getID,
		"GET /v1/status": s.getStatus,
		"GET /v1/peers":  s.getPeers,
		"GET /metrics":   s.getMetrics,
		// Market search: q is the query, sort a field (-field descending),
		// limit a count, explain=true adds per-clause counts.
		"GET /v1/market/search":                s.getSearch,
		"GET /v1/market/providers/{peer}":      s.getProvider,
		"GET /v1/capacity":                     s.getCapacity,
		"POST /v1/jobs":                        s.postJob,
		"GET /v1/jobs":                         s.getJobs,
		"GET /v1/jobs/{id}":                    s.getJob,
		"GET /v1/jobs/{id}/events":             s.getJobEvents,
		"GET /v1/leases":                       s.getLeases,
		"GET /v1/market/prices":                s.getPrices,
		"GET /v1/jobs/{id}/logs":               s.getJobLogs,
		"GET /v1/jobs/{id}/result":             s.getJobResult,
		"POST /v1/jobs/{id}/cancel":            s.postJobCancel,
		"POST /v1/artifacts":                   s.postArtifact,
		"GET /v1/reputation":                   s.getReputations,
		"GET /v1/reputation/{peer}":            s.getReputation,
		"GET /v1/earnings":                     s.getEarnings,
		"GET /v1/spend":                        s.getSpend,
		"GET /v1/leases/{id}/attestations":     s.getAttestations,
		"POST /v1/jobs/{id}/forwards":          s.postForward,
		"GET /v1/jobs/{id}/forwards":           s.getForwards,
		"DELETE /v1/jobs/{id}/forwards/{port}": s.deleteForward,
		"POST /v1/jobs/{id}/endpoint":          s.postEndpoint,
		"GET /v1/jobs/{id}/endpoint":           s.getEndpoint,
		"DELETE /v1/jobs/{id}/endpoint":        s.deleteEndpoint,
		"POST /v1/reload":                      s.postReload,
		"GET /v1/gpus/history":                 s.getGPUHistory,
		"GET /v1/artifacts":                    s.getArtifacts,
		"GET /v1/config":                       s.getConfig,
	}
	if s.opts.Debug {
		routes["POST /v1/debug/gossip"] = s.postGossip
		routes["GET /v1/debug/gossip"] = s.getGossip
	}
	known := map[string]bool{}
	for pattern, h := range routes {
		mux.Handle(pattern, s.wrap(h))
		_, path, _ := strings.Cut(pattern, " ")
		if !strings.Contains(path, "{") {
			known[path] = true
		}
	}
	pprofRoutes(mux)
	mux.Handle("/", s.wrap(func(_ http.ResponseWriter, r *http.Request) error {
		if known[r.URL.Path] {
			return Errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
		}
		return Errorf(http.StatusNotFound, CodeNotFound, "no such endpoint: %s", r.URL.Path)
	}))
	return s.guard(mux)
}

// guard applies the Host, Origin and token checks before any route.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts[r.Host] {
			writeError(w, Errorf(http.StatusForbidden, CodeForbidden, "host %q is not allowed: the API answers only to its loopback address", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o) {
			writeError(w, Errorf(http.StatusForbidden, CodeForbidden, "cross-origin request from %q refused", o))
			return
		}
		if s.opts.UI != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/")) {
			s.opts.UI.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		switch {
		case auth == "":
			writeError(w, Errorf(http.StatusUnauthorized, CodeUnauthorized, "missing bearer token (see api.token in the node's home)"))
			return
		case !ok || !tokenEqual(tok, s.opts.Token):
			writeError(w, Errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid bearer token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) originAllowed(origin string) bool {
	host, ok := strings.CutPrefix(origin, "http://")
	return ok && s.hosts[host]
}

func (s *Server) wrap(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var apiErr *Error
		if !errors.As(err, &apiErr) {
			s.log.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			apiErr = Errorf(http.StatusInternalServerError, CodeInternal, "%v", err)
		}
		writeError(w, apiErr)
	})
}

func writeError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (s *Server) getID(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, s.b.Identity())
}

func (s *Server) getStatus(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, s.b.Status())
}

func (s *Server) getPeers(w http.ResponseWriter, _ *http.Request) error {
	peers := s.b.Peers()
	if peers == nil {
		peers = []Peer{}
	}
	return writeJSON(w, peers)
}

func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request) error {
	g := s.opts.Gatherer
	if g == nil {
		g = prometheus.NewRegistry()
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP(w, r)
	return nil
}

func (s *Server) postGossip(w http.ResponseWriter, r *http.Request) error {
	topic := r.URL.Query().Get("topic")
	if topic == "" {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "query parameter topic is required")
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDebugBody))
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "read body: %v", err)
	}
	if err := s.b.PublishDebug(r.Context(), topic, data); err != nil {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "publish: %v", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getGossip(w http.ResponseWriter, r *http.Request) error {
	topic := r.URL.Query().Get("topic")
	msgs, err := s.b.RecentGossip(topic)
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	if msgs == nil {
		msgs = []GossipMessage{}
	}
	return writeJSON(w, msgs)
}

func (s *Server) getSearch(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "limit %q: want a non-negative integer", l)
		}
		limit = n
	}
	explain := q.Get("explain") == "true" || q.Get("explain") == "1"
	res, err := s.b.Search(r.Context(), q.Get("q"), q.Get("sort"), limit, explain)
	if err != nil {
		return err
	}
	return writeJSON(w, res)
}

func (s *Server) getProvider(w http.ResponseWriter, r *http.Request) error {
	o, err := s.b.Provider(r.Context(), r.PathValue("peer"))
	if err != nil {
		return err
	}
	return writeJSON(w, o)
}

func (s *Server) getCapacity(w http.ResponseWriter, _ *http.Request) error {
	o, err := s.b.Capacity()
	if err != nil {
		return err
	}
	return writeJSON(w, o)
}

func (s *Server) postJob(w http.ResponseWriter, r *http.Request) error {
	spec, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSpecBody))
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeBadSpec, "read job spec (at most %d KiB): %v", maxSpecBody>>10, err)
	}
	job, err := s.b.SubmitJob(r.Context(), spec, SubmitOptions{IdempotencyKey: r.Header.Get(IdempotencyKeyHeader)})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/jobs/"+job.ID)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	return json.NewEncoder(w).Encode(job)
}

func (s *Server) getJobs(w http.ResponseWriter, _ *http.Request) error {
	jobs, err := s.b.Jobs()
	if err != nil {
		return err
	}
	if jobs == nil {
		jobs = []Job{}
	}
	return writeJSON(w, jobs)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	job, err := s.b.Job(r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, job)
}

// getJobEvents streams a job's events as server-sent events, one JSON
// JobEvent per "data:" line, until the job is terminal.
func (s *Server) getJobEvents(w http.ResponseWriter, r *http.Request) error {
	events, err := s.b.WatchJob(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return Errorf(http.StatusInternalServerError, CodeInternal, "streaming unsupported")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	for ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			return nil
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Kind, data); err != nil {
			return nil
		}
		flusher.Flush()
	}
	return nil
}

func (s *Server) getLeases(w http.ResponseWriter, _ *http.Request) error {
	leases, err := s.b.Leases()
	if err != nil {
		return err
	}
	if leases == nil {
		leases = []Lease{}
	}
	return writeJSON(w, leases)
}

func (s *Server) getPrices(w http.ResponseWriter, r *http.Request) error {
	window := 24 * time.Hour
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "window %q: want a positive duration such as 24h", v)
		}
		window = d
	}
	p, err := s.b.Prices(window)
	if err != nil {
		return err
	}
	return writeJSON(w, p)
}
