package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/p2p"
)

// TunnelLimits are the stream caps of Proto: few streams per peer (a
// browser opens six per host), a short header deadline.
var TunnelLimits = p2p.TunnelLimits{MaxHeader: MaxHeaderBytes, HeaderTimeout: 5 * time.Second,
	MaxPerPeer: 64, MaxConcurrent: 512}

// Target is where an authorised tunnel goes.
type Target struct {
	// Addr is the container port's address as the provider reaches it.
	Addr string
	// Done is closed when the lease ends; its tunnels are closed then.
	Done <-chan struct{}
}

// Resolver authorises a tunnel and finds its target. It fails with
// ErrRefused, ErrNotFound or ErrUnavailable (wrapped), which the peer is
// told.
type Resolver func(ctx context.Context, from peer.ID, h Header) (Target, error)

// ServerConfig tunes the provider side.
type ServerConfig struct {
	Limits Limits
	// DialTimeout bounds connecting to the container (default 5 s).
	DialTimeout time.Duration
}

// ServerDeps are what the provider side needs.
type ServerDeps struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Resolve    Resolver
	// Dial connects to a target (default: TCP).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Server serves Proto on a provider.
type Server struct {
	cfg     ServerConfig
	deps    ServerDeps
	log     *slog.Logger
	metrics *metrics
}

// NewServer builds the provider side.
func NewServer(cfg ServerConfig, deps ServerDeps) (*Server, error) {
	if deps.Resolve == nil {
		return nil, errors.New("forward.NewServer: no resolver")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if deps.Dial == nil {
		d := &net.Dialer{}
		deps.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, deps: deps, log: log.With("component", "forward"), metrics: newMetrics(deps.Registerer, "served")}, nil
}

// Handle serves one tunnel: it is a p2p.TunnelHandler.
func (s *Server) Handle(ctx context.Context, from peer.ID, raw []byte, st io.ReadWriteCloser) error {
	h, err := DecodeHeader(raw)
	if err != nil {
		s.metrics.tunnels.WithLabelValues("malformed").Inc()
		return fmt.Errorf("forward.Handle: %w: %w", p2p.ErrMalformed, err)
	}
	w := msgio.NewVarintWriter(st)
	t, err := s.deps.Resolve(ctx, from, h)
	var conn net.Conn
	if err == nil {
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
		conn, err = s.deps.Dial(dctx, t.Addr)
		cancel()
		if err != nil {
			err = fmt.Errorf("%w: port %d: %w", ErrUnavailable, h.Port, err)
		}
	}
	reply := replyFor(err)
	s.metrics.tunnels.WithLabelValues(resultLabel(reply.Code)).Inc()
	if werr := w.WriteMsg(reply.Encode()); werr != nil || err != nil {
		if conn != nil {
			_ = conn.Close()
		}
		if err != nil {
			s.log.Debug("tunnel refused", "peer", from, "lease", h.LeaseID, "port", h.Port, "err", err)
		}
		return werr
	}
	s.metrics.open.Inc()
	defer s.metrics.open.Dec()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.Done != nil {
		stop := afterClose(t.Done, cancel)
		defer stop()
	}
	in, out := s.metrics.bytes.WithLabelValues("in"), s.metrics.bytes.WithLabelValues("out")
	err = pipe(ctx, st, conn, s.cfg.Limits, func(aToB bool, n int) {
		if aToB {
			in.Add(float64(n))
		} else {
			out.Add(float64(n))
		}
	})
	if err != nil {
		s.log.Debug("tunnel ended", "peer", from, "lease", h.LeaseID, "err", err)
	}
	return nil
}

// afterClose calls f when done is closed, unless stop is called first.
func afterClose(done <-chan struct{}, f func()) (stop func()) {
	quit := make(chan struct{})
	go func() {
		select {
		case <-done:
			f()
		case <-quit:
		}
	}()
	return func() { close(quit) }
}

func resultLabel(code byte) string {
	switch code {
	case ReplyOK:
		return "ok"
	case ReplyRefused:
		return "refused"
	case ReplyNotFound:
		return "not_found"
	default:
		return "unavailable"
	}
}
