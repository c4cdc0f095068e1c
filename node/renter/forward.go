package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ErrNotService: forwarding was asked of a job that is not a service, or
// of a port its spec does not name.
var ErrNotService = errors.New("not a service port")

// ErrForwardExists: the job's port is already forwarded.
var ErrForwardExists = errors.New("port already forwarded")

// forwardBook holds the renter's forwards, by job and container port.
type forwardBook struct {
	mu sync.Mutex
	m  map[string]map[uint16]*forward.Forwarder
}

func (b *forwardBook) add(job string, f *forward.Forwarder) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]map[uint16]*forward.Forwarder{}
	}
	if b.m[job] == nil {
		b.m[job] = map[uint16]*forward.Forwarder{}
	}
	if b.m[job][f.Port()] != nil {
		return false
	}
	b.m[job][f.Port()] = f
	return true
}

func (b *forwardBook) remove(job string, port uint16) *forward.Forwarder {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.m[job][port]
	delete(b.m[job], port)
	if len(b.m[job]) == 0 {
		delete(b.m, job)
	}
	return f
}

// drop removes f if it still holds its slot (StopForward and a newer
// forward may have taken it since).
func (b *forwardBook) drop(job string, f *forward.Forwarder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m[job][f.Port()] == f {
		delete(b.m[job], f.Port())
		if len(b.m[job]) == 0 {
			delete(b.m, job)
		}
	}
}

func (b *forwardBook) list(job string) []*forward.Forwarder {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*forward.Forwarder
	for _, p := range slices.Sorted(maps.Keys(b.m[job])) {
		out = append(out, b.m[job][p])
	}
	return out
}

// StartForward forwards listen (default 127.0.0.1:PORT) to port of a
// service job's container, over the tunnel to whichever provider runs it
// (followed across re-auctions). It stops when the job ends or
// StopForward is called.
func (a *Renter) StartForward(jobID, listen string, port uint16) (api.Forward, error) {
	j, err := a.db.GetJob(jobID)
	if err != nil {
		return api.Forward{}, fmt.Errorf("forward: %w", err)
	}
	spec, err := auction.ParseJobSpec(j.Spec)
	if err != nil {
		return api.Forward{}, fmt.Errorf("forward: %w", err)
	}
	w, err := spec.Workload()
	if err != nil {
		return api.Forward{}, fmt.Errorf("forward: %w", err)
	}
	if w.Service == nil || !w.Service.HasPort(port) {
		return api.Forward{}, fmt.Errorf("forward: %w: job %s exposes no port %d", ErrNotService, jobID, port)
	}
	if lease.JobState(j.State).Terminal() {
		return api.Forward{}, fmt.Errorf("forward: %w", ErrJobEnded)
	}
	if listen == "" {
		listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	}
	f, err := forward.NewForwarder(forward.ForwarderConfig{Listen: listen, Port: port}, forward.ForwarderDeps{
		Logger: a.log, Registerer: a.registerer, Clock: a.now,
		Dest: func(context.Context) (peer.ID, string, error) { return a.serviceLease(jobID) },
		Open: func(ctx context.Context, p peer.ID, hdr []byte) (io.ReadWriteCloser, error) {
			return a.p2p.OpenTunnel(ctx, p, forward.Proto, hdr, forward.TunnelLimits)
		},
	})
	if err != nil {
		return api.Forward{}, err
	}
	if !a.forwards.add(jobID, f) {
		_ = f.Close()
		return api.Forward{}, fmt.Errorf("forward: %w: job %s port %d", ErrForwardExists, jobID, port)
	}
	err = a.background(func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The forward ends with the job.
		if events, err := a.jobs.watch(ctx, jobID); err == nil {
			go func() {
				for range events {
				}
				cancel()
			}()
		}
		if err := f.Run(ctx); err != nil {
			a.log.Warn("forward stopped", "job", jobID, "port", port, "err", err)
		}
		a.forwards.drop(jobID, f)
	})
	if err != nil {
		a.forwards.drop(jobID, f)
		_ = f.Close()
		return api.Forward{}, err
	}
	return forwardView(jobID, f), nil
}

// StopForward ends a job's forward of port.
func (a *Renter) StopForward(jobID string, port uint16) error {
	f := a.forwards.remove(jobID, port)
	if f == nil {
		return fmt.Errorf("forward: %w: job %s port %d is not forwarded", store.ErrNotFound, jobID, port)
	}
	return f.Close()
}

// Forwards lists a job's running forwards with their stats.
func (a *Renter) Forwards(jobID string) []api.Forward {
	var out []api.Forward
	for _, f := range a.forwards.list(jobID) {
		out = append(out, forwardView(jobID, f))
	}
	return out
}

func forwardView(jobID string, f *forward.Forwarder) api.Forward {
	s := f.Stats()
	return api.Forward{Job: jobID, Port: f.Port(), Listen: f.Addr().String(), Stats: api.ForwardStats{
		Requests: s.Requests, Conns: s.Conns, Failed: s.Failed, Open: s.Open, P50Ms: s.P50Ms, P95Ms: s.P95Ms,
		RatePerSec: s.RatePerSec, BytesIn: s.BytesIn, BytesOut: s.BytesOut,
	}}
}

// serviceLease is the running lease serving a job now, and its provider.
func (a *Renter) serviceLease(jobID string) (peer.ID, string, error) {
	j, err := a.db.GetJob(jobID)
	if err != nil {
		return "", "", err
	}
	for _, id := range slices.Backward(j.Leases) {
		l, err := a.db.GetLease(id)
		if err != nil || l.Side != lease.SideRenter || lease.State(l.State).Terminal() {
			continue
		}
		p, err := peer.Decode(l.Provider)
		if err != nil {
			continue
		}
		return p, l.ID, nil
	}
	return "", "", fmt.Errorf("%w: job %s has no live lease (%s)", forward.ErrUnavailable, jobID, j.State)
}
