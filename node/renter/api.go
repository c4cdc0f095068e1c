package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// The room's doors: the protocol handlers the node routes to it and the
// operations its API calls. Each passes to the component that does it.

// ErrJobEnded is returned when cancelling a job that already ended.
var ErrJobEnded = errors.New("job already ended")

// HandleBid receives a sealed bid over lease.BidProto.
func (r *Renter) HandleBid(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	return r.bids.handleBid(ctx, from, req)
}

// HandlePreempt receives a provider's sealed preemption notice over
// lease.PreemptProto.
func (r *Renter) HandlePreempt(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	return r.preempts.handle(ctx, from, req)
}

// ServeJob serves a provider's job-protocol request: the spec and the
// artifacts of a lease it holds with this renter.
func (r *Renter) ServeJob(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	return r.server.serveJob(ctx, from, req, send)
}

// Submit validates a YAML job spec, records a new job and starts its
// auction. Nothing is published for a spec that fails validation.
func (r *Renter) Submit(specYAML []byte) (*store.Job, error) {
	return r.SubmitWith(specYAML, SubmitOptions{})
}

// SubmitWith is Submit with options. Each submission is its own job with
// its own ID, even of a spec submitted before.
func (r *Renter) SubmitWith(specYAML []byte, opts SubmitOptions) (*store.Job, error) {
	return r.submitter.submit(specYAML, opts)
}

// Watch returns a job's events so far, then new ones, closing when the
// job ends or ctx ends.
func (r *Renter) Watch(ctx context.Context, jobID string) (<-chan store.JobEvent, error) {
	return r.jobs.watch(ctx, jobID)
}

// Cancel stops a job: its auction ends, each live lease's provider is told
// to stop the work (with its grace), and the job is recorded cancelled.
func (r *Renter) Cancel(ctx context.Context, jobID string) (*store.Job, error) {
	j, err := r.db.GetJob(jobID)
	if err != nil {
		return nil, err
	}
	if lease.JobState(j.State).Terminal() {
		return j, fmt.Errorf("job %s: %w (%s)", jobID, ErrJobEnded, j.State)
	}
	r.runs.stop(jobID)
	for _, id := range j.Leases {
		if l, err := r.db.GetLease(id); err == nil && !lease.State(l.State).Terminal() {
			r.follower.cancelLease(ctx, l, "job cancelled by the renter")
		}
	}
	return r.jobs.setState(jobID, lease.JobCancelled, "cancelled", "cancelled by the renter")
}

// AddArtifact stores an artifact (a WASM module) that this renter's jobs
// name by CID, so that their providers can fetch it; it returns the CID.
func (r *Renter) AddArtifact(rd io.Reader) (string, error) {
	id, err := r.artifacts.Put(rd, lease.MaxModuleBytes)
	if err != nil {
		return "", fmt.Errorf("add artifact: %w", err)
	}
	return id, nil
}

// Logs copies a job's log from its provider to w: the named lease's, or
// the latest lease's. With follow it streams until the work ends.
func (r *Renter) Logs(ctx context.Context, jobID, leaseID string, follow bool, w io.Writer) error {
	return r.fetcher.logs(ctx, jobID, leaseID, follow, w)
}

// Result returns a finished lease's output tar in the local cache,
// downloading what is missing from its provider (resuming an interrupted
// download; the whole file must hash to the CID the provider recorded).
func (r *Renter) Result(ctx context.Context, jobID, leaseID string) (*store.Lease, string, error) {
	return r.fetcher.result(ctx, jobID, leaseID)
}

// ResultBytesFetched counts the output bytes this renter received from
// providers (a resumed download fetches only what was missing).
func (r *Renter) ResultBytesFetched() int64 { return r.fetcher.downloads.fetched.Load() }

// ResultCachePath is where a lease's downloaded output tar is cached.
func (r *Renter) ResultCachePath(leaseID string) string {
	return filepath.Join(r.fetcher.downloads.dir, leaseID+".tar")
}

// StartForward forwards listen (default 127.0.0.1:PORT) to port of a
// service job's container, over the tunnel to whichever provider runs it
// (followed across re-auctions). It stops when the job ends or
// StopForward is called.
func (r *Renter) StartForward(jobID, listen string, port uint16) (Forward, error) {
	return r.forwards.start(jobID, listen, port)
}

// StopForward ends a job's forward of port.
func (r *Renter) StopForward(jobID string, port uint16) error {
	return r.forwards.stop(jobID, port)
}

// Forwards lists a job's running forwards with their stats.
func (r *Renter) Forwards(jobID string) []Forward { return r.forwards.list(jobID) }

// StartEndpoint serves a service job's port on one local address, listen
// (default 127.0.0.1:PORT), balanced over the job's replicas as they come
// and go (package endpoint). It stops when the job ends or StopEndpoint is
// called.
func (r *Renter) StartEndpoint(jobID, listen string, port uint16) (Endpoint, error) {
	return r.endpoints.start(jobID, listen, port)
}

// StopEndpoint ends a job's endpoint.
func (r *Renter) StopEndpoint(jobID string) error { return r.endpoints.stop(jobID) }

// ServiceEndpoint is a job's endpoint with its stats per replica and for
// the service; false when the job has none.
func (r *Renter) ServiceEndpoint(jobID string) (Endpoint, bool) { return r.endpoints.get(jobID) }
