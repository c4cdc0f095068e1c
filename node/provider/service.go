package provider

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// serviceBook holds the provider's running services: what the tunnel
// server reaches and the health checker watches.
type serviceBook struct {
	mu sync.Mutex
	m  map[string]*serviceRun
}

// serviceRun is one lease's running service.
type serviceRun struct {
	renter string
	svc    *auction.Service
	ep     executor.Endpointer
	h      executor.Handle
	// done is closed when the workload stops; open tunnels close with it.
	done chan struct{}
}

func newServiceBook() *serviceBook { return &serviceBook{m: map[string]*serviceRun{}} }

func (b *serviceBook) get(id string) *serviceRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[id]
}

// leaseService returns the lease's service spec, nil for batch work.
func leaseService(l *store.Lease) *auction.Service {
	if l.Spec == nil {
		return nil
	}
	spec, err := auction.ParseJobSpec(l.Spec)
	if err != nil {
		return nil
	}
	w, err := spec.Workload()
	if err != nil {
		return nil
	}
	return w.Service
}

// runService makes a running service lease reachable through the tunnel
// and starts its health checks. The returned function ends both; it must
// be called once the workload stopped.
func (r *leaseRunner) runService(ctx context.Context, id string, ex executor.Executor, h executor.Handle) (end func()) {
	l, err := r.p.db.GetLease(id)
	if err != nil {
		return func() {}
	}
	svc := leaseService(l)
	if svc == nil {
		return func() {}
	}
	ep, ok := ex.(executor.Endpointer)
	if !ok {
		r.log.Warn("service lease on a runtime without endpoints", "lease", lease.Short(id), "runtime", l.Runtime)
		return func() {}
	}
	run := &serviceRun{renter: l.Renter, svc: svc, ep: ep, h: h, done: make(chan struct{})}
	r.p.services.mu.Lock()
	r.p.services.m[id] = run
	r.p.services.mu.Unlock()
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.checkHealth(hctx, id, run) })
	return func() {
		cancel()
		wg.Wait()
		r.p.services.mu.Lock()
		delete(r.p.services.m, id)
		r.p.services.mu.Unlock()
		close(run.done)
	}
}

// checkHealth runs the spec's health check every interval and records
// the verdict in the lease when it changes (the renter long-polls it):
// unhealthy after threshold failures in a row, healthy after a pass.
func (r *leaseRunner) checkHealth(ctx context.Context, id string, run *serviceRun) {
	svc := run.svc
	if svc.Health.Port == 0 {
		r.setHealth(id, lease.HealthHealthy)
		return
	}
	r.setHealth(id, lease.HealthStarting)
	interval := svc.Interval()
	t := time.NewTicker(interval)
	defer t.Stop()
	failures := uint32(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := probe(ctx, run, min(interval, 10*time.Second))
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			r.setHealth(id, lease.HealthHealthy)
			continue
		}
		failures++
		r.log.Debug("health check failed", "lease", lease.Short(id), "check", svc.Health.String(), "failures", failures, "err", err)
		if failures >= svc.HealthThreshold {
			r.setHealth(id, lease.HealthUnhealthy)
		}
	}
}

func (r *leaseRunner) setHealth(id, health string) {
	changed := false
	_, err := r.book.Update(id, func(l *store.Lease) bool {
		if l.Health == health || lease.State(l.State).Terminal() {
			return false
		}
		l.Health, changed = health, true
		return true
	})
	if err == nil && changed {
		r.log.Info("service health", "lease", lease.Short(id), "health", health)
	}
}

// probe runs one health check: an HTTP GET answered 2xx or 3xx, or a TCP
// connection accepted.
func probe(ctx context.Context, run *serviceRun, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := run.svc.Health
	addr, err := run.ep.Endpoint(ctx, run.h, hc.Port)
	if err != nil {
		return err
	}
	if hc.Proto == "tcp" {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+hc.Path, nil)
	if err != nil {
		return err
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("http status %d", resp.StatusCode)
	}
	return nil
}

// healthClient follows no redirects (a 3xx passes) and keeps no
// connections, so a check sees a fresh connection each time.
var healthClient = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// ResolveTunnel authorises a tunnel to a lease's service: the lease's
// renter, or a peer its spec names, to one of its ports, while it runs.
// It is the forward.Resolver of the provider's tunnel server.
func (p *Provider) ResolveTunnel(ctx context.Context, from peer.ID, h forward.Header) (forward.Target, error) {
	l, err := p.db.GetLease(h.LeaseID)
	if err != nil || l.Side != lease.SideProvider {
		return forward.Target{}, fmt.Errorf("%w: no lease %s on this provider", forward.ErrNotFound, h.LeaseID)
	}
	run := p.services.get(l.ID)
	if run == nil {
		svc := leaseService(l)
		switch {
		case svc != nil && !svc.Allows(l.Renter, from.String()):
			return forward.Target{}, fmt.Errorf("%w: lease %s is not yours", forward.ErrRefused, lease.Short(l.ID))
		case svc != nil && !lease.State(l.State).Terminal():
			return forward.Target{}, fmt.Errorf("%w: lease %s is %s, not serving yet", forward.ErrUnavailable, lease.Short(l.ID), l.State)
		}
		return forward.Target{}, fmt.Errorf("%w: lease %s runs no service (%s)", forward.ErrNotFound, lease.Short(l.ID), l.State)
	}
	if !run.svc.Allows(run.renter, from.String()) {
		return forward.Target{}, fmt.Errorf("%w: lease %s is not yours", forward.ErrRefused, lease.Short(l.ID))
	}
	if !run.svc.HasPort(h.Port) {
		return forward.Target{}, fmt.Errorf("%w: port %d is not one of the service's ports %v", forward.ErrRefused, h.Port, run.svc.Ports)
	}
	addr, err := run.ep.Endpoint(ctx, run.h, h.Port)
	if err != nil {
		return forward.Target{}, fmt.Errorf("%w: %w", forward.ErrUnavailable, err)
	}
	return forward.Target{Addr: addr, Done: run.done}, nil
}

// HandleTunnel serves the forward protocol (route it with
// forward.TunnelLimits).
func (p *Provider) HandleTunnel(ctx context.Context, from peer.ID, header []byte, s io.ReadWriteCloser) error {
	return p.fwd.Handle(ctx, from, header, s)
}
