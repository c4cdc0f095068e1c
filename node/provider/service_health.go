package provider

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// runService makes a running service lease reachable through the tunnel
// and starts its health checks. The returned function ends both; it must
// be called once the workload stopped.
func (r *leaseRunner) runService(ctx context.Context, id string, ex executor.Executor, h executor.Handle) (end func()) {
	l, err := r.db.GetLease(id)
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
	r.services.put(id, run)
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.checkHealth(hctx, id, run) })
	return func() {
		cancel()
		wg.Wait()
		r.services.remove(id)
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
