package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ErrNotService: forwarding was asked of a job that is not a service, or
// of a port its spec does not name.
var ErrNotService = errors.New("not a service port")

// ErrForwardExists: the job's port is already forwarded.
var ErrForwardExists = errors.New("port already forwarded")

// Forward is one running forward of a service job: the local address it
// listens on, the container port it reaches, and its stats.
type Forward struct {
	Job    string
	Port   uint16
	Listen string // the bound local address
	Stats  forward.Stats
}

// forwardDeps are what the forwards need of the room.
type forwardDeps struct {
	log *slog.Logger
	now func() time.Time
	db  *store.DB
	// registerer gets the forwards' metrics; nil: none.
	registerer prometheus.Registerer
	// openTunnel opens a tunnel to a provider (p2p.Node.OpenTunnel).
	openTunnel func(ctx context.Context, p peer.ID, hdr []byte) (io.ReadWriteCloser, error)
	// watch streams a job's events until it ends (jobTracker.watch).
	watch func(ctx context.Context, jobID string) (<-chan store.JobEvent, error)
	// background starts work on the room's context (background.Go).
	background func(fn func(ctx context.Context)) error
}

// forwards are the renter's service forwards: each listens locally and
// tunnels to whichever provider runs the job now.
type forwards struct {
	forwardDeps
	book forwardBook
}

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

// start forwards listen (default 127.0.0.1:PORT) to port of a
// service job's container, over the tunnel to whichever provider runs it
// (followed across re-auctions). It stops when the job ends or
// StopForward is called.
func (fw *forwards) start(jobID, listen string, port uint16) (Forward, error) {
	_, listen, err := serviceListen(fw.db, jobID, listen, port)
	if err != nil {
		return Forward{}, fmt.Errorf("forward: %w", err)
	}
	f, err := forward.NewForwarder(forward.ForwarderConfig{Listen: listen, Port: port}, forward.ForwarderDeps{
		Logger: fw.log, Registerer: fw.registerer, Clock: fw.now,
		Dest: func(context.Context) (peer.ID, string, error) { return fw.serviceLease(jobID) },
		Open: fw.openTunnel,
	})
	if err != nil {
		return Forward{}, err
	}
	if !fw.book.add(jobID, f) {
		_ = f.Close()
		return Forward{}, fmt.Errorf("forward: %w: job %s port %d", ErrForwardExists, jobID, port)
	}
	err = fw.background(func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The forward ends with the job.
		if events, err := fw.watch(ctx, jobID); err == nil {
			go func() {
				for range events {
				}
				cancel()
			}()
		}
		if err := f.Run(ctx); err != nil {
			fw.log.Warn("forward stopped", "job", jobID, "port", port, "err", err)
		}
		fw.book.drop(jobID, f)
	})
	if err != nil {
		fw.book.drop(jobID, f)
		_ = f.Close()
		return Forward{}, err
	}
	return forwardView(jobID, f), nil
}

// stop ends a job's forward of port.
func (fw *forwards) stop(jobID string, port uint16) error {
	f := fw.book.remove(jobID, port)
	if f == nil {
		return fmt.Errorf("forward: %w: job %s port %d is not forwarded", store.ErrNotFound, jobID, port)
	}
	return f.Close()
}

// list lists a job's running forwards with their stats.
func (fw *forwards) list(jobID string) []Forward {
	var out []Forward
	for _, f := range fw.book.list(jobID) {
		out = append(out, forwardView(jobID, f))
	}
	return out
}

func forwardView(jobID string, f *forward.Forwarder) Forward {
	return Forward{Job: jobID, Port: f.Port(), Listen: f.Addr().String(), Stats: f.Stats()}
}

// serviceLease is the running lease serving a job now, and its provider.
func (fw *forwards) serviceLease(jobID string) (peer.ID, string, error) {
	j, err := fw.db.GetJob(jobID)
	if err != nil {
		return "", "", err
	}
	for _, id := range slices.Backward(j.Leases) {
		l, err := fw.db.GetLease(id)
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

// serviceListen checks that job jobID is a live service exposing port and
// returns it with the address to listen on (default 127.0.0.1:PORT): what
// a forward and an endpoint both check before they open.
func serviceListen(db *store.DB, jobID, listen string, port uint16) (*store.Job, string, error) {
	j, err := db.GetJob(jobID)
	if err != nil {
		return nil, "", err
	}
	spec, err := auction.ParseJobSpec(j.Spec)
	if err != nil {
		return nil, "", err
	}
	w, err := spec.Workload()
	if err != nil {
		return nil, "", err
	}
	if w.Service == nil || !w.Service.HasPort(port) {
		return nil, "", fmt.Errorf("%w: job %s exposes no port %d", ErrNotService, jobID, port)
	}
	if lease.JobState(j.State).Terminal() {
		return nil, "", ErrJobEnded
	}
	if listen == "" {
		listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	}
	return j, listen, nil
}
