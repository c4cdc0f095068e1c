package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	"github.com/prometheus/client_golang/prometheus"
)

// Dest is where a forwarded connection goes now: the lease serving the job
// and its provider. It is asked again for each connection, so a service
// re-auctioned elsewhere is followed.
type Dest func(ctx context.Context) (provider peer.ID, leaseID string, err error)

// Opener opens a tunnel stream to a provider with the given header
// (p2p.Node.OpenTunnel with TunnelLimits).
type Opener func(ctx context.Context, p peer.ID, header []byte) (io.ReadWriteCloser, error)

// ForwarderConfig says what to forward.
type ForwarderConfig struct {
	// Listen is the local address ("127.0.0.1:8080"; port 0 picks one).
	Listen string
	// Port is the container port.
	Port   uint16
	Limits Limits
	// Reconnect is how long a connection waits for a tunnel, trying again
	// with backoff, before it is dropped (default 30 s).
	Reconnect time.Duration
}

// ForwarderDeps are what the renter side needs.
type ForwarderDeps struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Clock      func() time.Time
	Dest       Dest
	Open       Opener
}

// Forwarder carries local connections to one port of a service.
type Forwarder struct {
	cfg     ForwarderConfig
	deps    ForwarderDeps
	log     *slog.Logger
	ln      net.Listener
	rec     *recorder
	metrics *metrics

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewForwarder binds the local listener; Run serves it.
func NewForwarder(cfg ForwarderConfig, deps ForwarderDeps) (*Forwarder, error) {
	if deps.Dest == nil || deps.Open == nil {
		return nil, errors.New("forward.NewForwarder: Dest and Open are required")
	}
	if cfg.Port == 0 {
		return nil, errors.New("forward.NewForwarder: port 0")
	}
	if cfg.Reconnect <= 0 {
		cfg.Reconnect = 30 * time.Second
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("forward.NewForwarder: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Forwarder{
		cfg: cfg, deps: deps, log: log.With("component", "forward", "port", cfg.Port), ln: ln,
		rec: newRecorder(deps.Clock()), metrics: newMetrics(deps.Registerer, "client"), ctx: ctx, cancel: cancel,
	}, nil
}

// Addr is the local listener's address.
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }

// Port is the container port forwarded.
func (f *Forwarder) Port() uint16 { return f.cfg.Port }

// Stats returns the counts and latencies so far.
func (f *Forwarder) Stats() Stats { return f.rec.snapshot(f.deps.Clock()) }

// Run accepts connections until ctx ends or Close; it closes the
// forwarder when it returns.
func (f *Forwarder) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = f.Close() })
	defer stop()
	defer f.Close()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if f.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("forward.Run: accept: %w", err)
		}
		if f.ctx.Err() != nil {
			_ = c.Close()
			return nil
		}
		f.rec.update(func(s *Stats) { s.Conns++; s.Open++ })
		f.wg.Go(func() {
			defer f.rec.update(func(s *Stats) { s.Open-- })
			f.serve(c)
		})
	}
}

// Close stops listening, closes every forwarded connection and waits for
// them. It is idempotent.
func (f *Forwarder) Close() error {
	f.closeOnce.Do(func() {
		f.cancel()
		_ = f.ln.Close()
	})
	f.wg.Wait()
	return nil
}

func (f *Forwarder) serve(local net.Conn) {
	defer local.Close()
	st, err := f.open(f.ctx)
	if err != nil {
		f.rec.update(func(s *Stats) { s.Failed++ })
		f.log.Info("forward: no tunnel", "err", err)
		return
	}
	f.metrics.open.Inc()
	defer f.metrics.open.Dec()
	var mu sync.Mutex
	var waiting bool
	var sent time.Time
	in, out := f.metrics.bytes.WithLabelValues("in"), f.metrics.bytes.WithLabelValues("out")
	_ = pipe(f.ctx, local, st, f.cfg.Limits, func(request bool, n int) {
		now := f.deps.Clock()
		mu.Lock()
		defer mu.Unlock()
		if request {
			in.Add(float64(n))
			f.rec.update(func(s *Stats) { s.BytesIn += int64(n) })
			if !waiting {
				waiting, sent = true, now
			}
			return
		}
		out.Add(float64(n))
		f.rec.update(func(s *Stats) { s.BytesOut += int64(n) })
		if waiting {
			waiting = false
			lat := now.Sub(sent)
			f.rec.request(now, lat)
			f.metrics.requests.Inc()
			f.metrics.latency.Observe(lat.Seconds())
		}
	})
}

// open opens a tunnel, trying again with backoff until Reconnect runs
// out; a refusal ends the attempts at once.
func (f *Forwarder) open(ctx context.Context) (io.ReadWriteCloser, error) {
	deadline := f.deps.Clock().Add(f.cfg.Reconnect)
	backoff := 100 * time.Millisecond
	for {
		st, err := f.openOnce(ctx)
		if err == nil {
			f.metrics.tunnels.WithLabelValues("ok").Inc()
			return st, nil
		}
		f.metrics.tunnels.WithLabelValues(errLabel(err)).Inc()
		if errors.Is(err, ErrRefused) || ctx.Err() != nil || f.deps.Clock().After(deadline) {
			return nil, err
		}
		f.log.Debug("forward: retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (f *Forwarder) openOnce(ctx context.Context) (io.ReadWriteCloser, error) {
	p, leaseID, err := f.deps.Dest(ctx)
	if err != nil {
		return nil, err
	}
	return Dial(ctx, f.deps.Open, p, leaseID, f.cfg.Port)
}

// Dial opens one tunnel to port of a lease's service at its provider p
// and reads the provider's reply; the stream it returns then carries the
// connection's raw bytes.
func Dial(ctx context.Context, open Opener, p peer.ID, leaseID string, port uint16) (io.ReadWriteCloser, error) {
	hdr, err := Header{LeaseID: leaseID, Port: port}.Encode()
	if err != nil {
		return nil, err
	}
	st, err := open(ctx, p, hdr)
	if err != nil {
		return nil, err
	}
	// The reply must come quickly; a reset or garbage means no tunnel.
	stop := context.AfterFunc(ctx, func() { _ = st.Close() })
	timer := time.AfterFunc(TunnelLimits.HeaderTimeout, func() { _ = st.Close() })
	raw, err := msgio.NewVarintReaderSize(st, MaxReplyBytes).ReadMsg()
	timer.Stop()
	stop()
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("%w: no reply: %w", ErrUnavailable, err)
	}
	r, err := DecodeReply(raw)
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

func errLabel(err error) string {
	switch {
	case errors.Is(err, ErrRefused):
		return "refused"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return "error"
}
