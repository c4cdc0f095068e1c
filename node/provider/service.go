package provider

import (
	"context"
	"fmt"
	"sync"

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
	// lease reads a stored lease (the store's GetLease).
	lease func(id string) (*store.Lease, error)

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

func newServiceBook(lease func(id string) (*store.Lease, error)) *serviceBook {
	return &serviceBook{lease: lease, m: map[string]*serviceRun{}}
}

func (b *serviceBook) get(id string) *serviceRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[id]
}

func (b *serviceBook) put(id string, run *serviceRun) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[id] = run
}

func (b *serviceBook) remove(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, id)
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

// resolve authorises a tunnel to a lease's service: the lease's renter,
// or a peer its spec names, to one of its ports, while it runs. It is the
// forward.Resolver of the provider's tunnel server.
func (b *serviceBook) resolve(ctx context.Context, from peer.ID, h forward.Header) (forward.Target, error) {
	l, err := b.lease(h.LeaseID)
	if err != nil || l.Side != lease.SideProvider {
		return forward.Target{}, fmt.Errorf("%w: no lease %s on this provider", forward.ErrNotFound, h.LeaseID)
	}
	run := b.get(l.ID)
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
