package endpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Replica is one serving copy of the service.
type Replica struct {
	// ID names the replica (its lease); Slot is its place among the
	// service's replicas (0..N-1), the label of its metrics.
	ID   string
	Slot int
	// Provider is shown in the status.
	Provider string
	// Dial opens a connection to the replica's service port.
	Dial func(ctx context.Context) (net.Conn, error)
}

// Config is an endpoint's address and retry bounds.
type Config struct {
	// Listen is the local address to serve on ("127.0.0.1:0": any port).
	Listen string
	// MaxAttempts bounds the replicas one request is sent to (default 3).
	MaxAttempts int
	// MaxRetryBody is the largest request body kept to send again
	// (default 1 MiB); a larger one is sent once.
	MaxRetryBody int64
	// DialTimeout bounds opening a connection to a replica (default 5s):
	// a replica whose provider vanished is given up on for another
	// rather than holding the request for the tunnel's own timeout.
	DialTimeout time.Duration
}

// Deps are what an endpoint needs.
type Deps struct {
	Logger *slog.Logger
	Clock  func() time.Time
	// Registerer gets the endpoint's metrics; nil: none.
	Registerer prometheus.Registerer
}

// failBackoff is how long a replica that failed a connection is passed
// over while another can take the request, doubling with each failure in
// a row up to 16 times.
const failBackoff = 2 * time.Second

// maxGone bounds the replaced replicas whose stats are kept.
const maxGone = 64

// ErrNoReplica: no replica could take the request.
var ErrNoReplica = errors.New("no replica available")

// Endpoint serves one service on one address, over its replicas.
type Endpoint struct {
	cfg  Config
	deps Deps
	ln   net.Listener
	srv  *http.Server
	m    *metrics

	mu       sync.Mutex
	replicas []*replica // live ones, in the order set
	gone     []*replica // removed, kept for their stats
	turn     int
	total    recorder
	closed   bool
}

// replica is a Replica with its connection pool, load and stats.
type replica struct {
	Replica
	transport   *http.Transport
	inFlight    int // under Endpoint.mu
	fails       int // failures in a row, under Endpoint.mu
	failedUntil time.Time
	rec         recorder
}

// New binds the endpoint's address; Run serves it.
func New(cfg Config, deps Deps) (*Endpoint, error) {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.MaxRetryBody <= 0 {
		cfg.MaxRetryBody = 1 << 20
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("endpoint: listen on %s: %w", cfg.Listen, err)
	}
	e := &Endpoint{cfg: cfg, deps: deps, ln: ln, m: newMetrics(deps.Registerer)}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second}
	return e, nil
}

// Addr is the bound address.
func (e *Endpoint) Addr() net.Addr { return e.ln.Addr() }

// Run serves until ctx ends or Close is called.
func (e *Endpoint) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = e.Close() })
	defer stop()
	err := e.srv.Serve(e.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and drops every connection; it is idempotent.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	rs := slices.Clone(e.replicas)
	e.mu.Unlock()
	err := e.srv.Close()
	for _, r := range rs {
		r.transport.CloseIdleConnections()
	}
	return err
}

// SetReplicas makes rs the replicas requests go to: a new one starts
// taking requests, one no longer in rs takes no new request (those in
// flight finish) and keeps its stats.
func (e *Endpoint) SetReplicas(rs []Replica) {
	e.mu.Lock()
	defer e.mu.Unlock()
	keep := map[string]*replica{}
	for _, r := range e.replicas {
		keep[r.ID] = r
	}
	var live []*replica
	for _, r := range rs {
		if cur := keep[r.ID]; cur != nil {
			delete(keep, r.ID)
			live = append(live, cur)
			continue
		}
		live = append(live, newReplica(r, e.cfg.DialTimeout))
	}
	for _, r := range e.replicas {
		if keep[r.ID] != nil {
			r.transport.CloseIdleConnections()
			e.gone = append(e.gone, r)
		}
	}
	if len(e.gone) > maxGone {
		e.gone = e.gone[len(e.gone)-maxGone:]
	}
	e.replicas = live
}

func newReplica(r Replica, dialTimeout time.Duration) *replica {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		return r.Dial(ctx)
	}
	return &replica{Replica: r, transport: &http.Transport{
		DialContext:         dial,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// pick takes the live replica with the fewest requests in flight that
// the request has not tried, passing over one that failed just now while
// another is there; ties go in turn. It counts the request in flight.
func (e *Endpoint) pick(tried map[string]bool) *replica {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.deps.Clock()
	n := len(e.replicas)
	var best *replica
	bestFailing := false
	for k := range n {
		r := e.replicas[(e.turn+k)%n]
		if tried[r.ID] {
			continue
		}
		failing := now.Before(r.failedUntil)
		if best == nil || (bestFailing && !failing) || (bestFailing == failing && r.inFlight < best.inFlight) {
			best, bestFailing = r, failing
		}
	}
	if best != nil {
		best.inFlight++
		e.turn++
	}
	return best
}

// hasUntried reports whether a live replica is left that the request has
// not tried: a 502/503/504 is passed on as it is when none is.
func (e *Endpoint) hasUntried(tried map[string]bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.replicas {
		if !tried[r.ID] {
			return true
		}
	}
	return false
}

func (e *Endpoint) release(r *replica, failed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.inFlight--
	if !failed {
		r.fails = 0
		return
	}
	// A replica that keeps failing (its provider gone, until the renter
	// replaces it) is tried less and less often.
	r.fails++
	r.failedUntil = e.deps.Clock().Add(failBackoff << min(r.fails-1, 4))
}

// Load is the requests in flight now and the replicas taking requests.
func (e *Endpoint) Load() (inFlight, replicas int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.replicas {
		inFlight += r.inFlight
	}
	return inFlight, len(e.replicas)
}

// ServiceStats are the service's totals and each replica's stats.
type ServiceStats struct {
	Total    Stats          `json:"total"`
	Replicas []ReplicaStats `json:"replicas"`
}

// ReplicaStats are one replica's stats; Live is false once it was replaced.
type ReplicaStats struct {
	ID       string `json:"id"`
	Slot     int    `json:"slot"`
	Provider string `json:"provider"`
	Live     bool   `json:"live"`
	Stats
}

// Stats are the endpoint's stats as of now.
func (e *Endpoint) Stats() ServiceStats {
	now := e.deps.Clock()
	e.mu.Lock()
	live, gone := slices.Clone(e.replicas), slices.Clone(e.gone)
	inFlight := map[*replica]int{}
	total := 0
	for _, r := range live {
		inFlight[r] = r.inFlight
		total += r.inFlight
	}
	e.mu.Unlock()
	out := ServiceStats{Total: e.total.snapshot(now)}
	out.Total.InFlight = total
	for _, r := range append(live, gone...) {
		s := ReplicaStats{ID: r.ID, Slot: r.Slot, Provider: r.Provider, Live: slices.Contains(live, r), Stats: r.rec.snapshot(now)}
		s.InFlight = inFlight[r]
		out.Replicas = append(out.Replicas, s)
	}
	return out
}
