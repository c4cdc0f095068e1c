package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ErrNoLease is returned when a job has no lease that fits the request.
var ErrNoLease = errors.New("no such lease")

// fetcherDeps are what the fetcher needs of the room.
type fetcherDeps struct {
	log  *slog.Logger
	db   *store.DB
	call jobCaller
}

// fetcher copies a job's logs and downloads its leases' output tars from
// their providers into the local cache.
type fetcher struct {
	fetcherDeps
	downloads *downloads
}

func newFetcher(deps fetcherDeps, dir string) *fetcher {
	return &fetcher{fetcherDeps: deps, downloads: &downloads{dir: dir, per: map[string]*sync.Mutex{}}}
}

// pickLease returns the job's lease named id, or without an id the job's
// latest lease that fits.
func (f *fetcher) pickLease(jobID, id string, fits func(*store.Lease) bool) (*store.Lease, error) {
	j, err := f.db.GetJob(jobID)
	if err != nil {
		return nil, err
	}
	for i := len(j.Leases) - 1; i >= 0; i-- {
		lid := j.Leases[i]
		if id != "" && lid != id && lease.Short(lid) != id {
			continue
		}
		l, err := f.db.GetLease(lid)
		if err != nil {
			return nil, err
		}
		if id != "" || fits(l) {
			return l, nil
		}
	}
	if id != "" {
		return nil, fmt.Errorf("job %s: lease %s: %w", jobID, id, ErrNoLease)
	}
	if lease.JobState(j.State).Terminal() {
		// It will never have one: say how it ended, not "yet".
		return nil, fmt.Errorf("job %s: %w: it ended %s (%s)", jobID, ErrNoLease, j.State, j.Reason)
	}
	return nil, fmt.Errorf("job %s: %w yet (state %s)", jobID, ErrNoLease, j.State)
}

// logs copies a job's log from its provider to w: the named lease's, or
// the latest lease's. With follow it streams until the work ends.
func (f *fetcher) logs(ctx context.Context, jobID, leaseID string, follow bool, w io.Writer) error {
	l, err := f.pickLease(jobID, leaseID, func(*store.Lease) bool { return true })
	if err != nil {
		return err
	}
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return err
	}
	_, fr, err := f.call(ctx, p, &jobproto.Request{Op: jobproto.OpLogs, Lease: l.ID, Follow: follow})
	if err != nil {
		return fmt.Errorf("logs of lease %s: %w", lease.Short(l.ID), err)
	}
	defer fr.Close()
	if _, err := lease.CopyFrames(w, fr); err != nil {
		return fmt.Errorf("logs of lease %s: %w", lease.Short(l.ID), err)
	}
	return nil
}

// downloads serialises the downloads of each lease's outputs.
type downloads struct {
	dir string
	mu  sync.Mutex
	per map[string]*sync.Mutex
	// fetched counts the bytes received over the job protocol (tests
	// check that a resumed download fetches only the rest).
	fetched atomic.Int64
}

func (d *downloads) lock(id string) func() {
	d.mu.Lock()
	m, ok := d.per[id]
	if !ok {
		m = &sync.Mutex{}
		d.per[id] = m
	}
	d.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// maxResultAttempts bounds the resumptions of one result download.
const maxResultAttempts = 5

// result returns a finished lease's output tar in the local cache,
// downloading what is missing from its provider: the download resumes from
// what an interrupted one left, and the whole file must hash to the CID the
// provider recorded, or it is discarded.
func (f *fetcher) result(ctx context.Context, jobID, leaseID string) (*store.Lease, string, error) {
	l, err := f.pickLease(jobID, leaseID, func(l *store.Lease) bool { return l.OutputCID != "" && l.State != lease.Unverified })
	if err != nil {
		return nil, "", err
	}
	if l.State == lease.Unverified {
		// Never served as a result: nothing signed vouches for it.
		return nil, "", fmt.Errorf("lease %s is unverified (%s): its output is not served", lease.Short(l.ID), l.Reason)
	}
	if l.OutputCID == "" {
		return nil, "", fmt.Errorf("lease %s is %s and has no outputs (yet)", lease.Short(l.ID), l.State)
	}
	d := f.downloads
	defer d.lock(l.ID)()
	final := filepath.Join(d.dir, l.ID+".tar")
	if err := executor.VerifyOutput(executor.Output{CID: l.OutputCID, Size: l.OutputSize, Path: final}); err == nil {
		return l, final, nil
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, "", err
	}
	part := final + ".part"
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return nil, "", err
	}
	var lastErr error
	for attempt := 0; attempt < maxResultAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, "", ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		done, err := f.fetchResultPart(ctx, p, l, part)
		if err != nil {
			if lease.Final(err) || ctx.Err() != nil {
				return nil, "", err
			}
			lastErr = err
			f.log.Info("result download interrupted; resuming", "lease", lease.Short(l.ID), "err", err)
			continue
		}
		if !done {
			continue
		}
		if err := executor.VerifyOutput(executor.Output{CID: l.OutputCID, Size: l.OutputSize, Path: part}); err != nil {
			_ = os.Remove(part)
			return nil, "", fmt.Errorf("result of lease %s: %w; the partial download was discarded", lease.Short(l.ID), err)
		}
		if err := os.Rename(part, final); err != nil {
			return nil, "", err
		}
		return l, final, nil
	}
	return nil, "", fmt.Errorf("result of lease %s: gave up after %d attempts: %w", lease.Short(l.ID), maxResultAttempts, lastErr)
}

// fetchResultPart appends to part what the provider sends from part's
// current size. done reports that part holds the whole output.
func (f *fetcher) fetchResultPart(ctx context.Context, p peer.ID, l *store.Lease, part string) (done bool, err error) {
	out, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, err
	}
	defer out.Close()
	info, err := out.Stat()
	if err != nil {
		return false, err
	}
	offset := info.Size()
	if offset > l.OutputSize {
		// Not a prefix of this output: start over.
		if err := out.Truncate(0); err != nil {
			return false, err
		}
		offset = 0
	}
	if offset == l.OutputSize {
		return true, nil
	}
	h, fr, err := f.call(ctx, p, &jobproto.Request{Op: jobproto.OpResult, Lease: l.ID, Offset: offset})
	if err != nil {
		return false, err
	}
	defer fr.Close()
	if h.CID != l.OutputCID || h.Size != l.OutputSize-offset {
		return false, lease.Permanent(fmt.Errorf("the provider offers %s (%d bytes from %d), the lease recorded %s (%d bytes)", h.CID, h.Size, offset, l.OutputCID, l.OutputSize))
	}
	n, err := lease.CopyFrames(&countingWriter{w: out, n: &f.downloads.fetched}, fr)
	if err != nil {
		return false, err
	}
	if err := out.Sync(); err != nil {
		return false, err
	}
	return offset+n == l.OutputSize, nil
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n.Add(int64(k))
	return k, err
}
