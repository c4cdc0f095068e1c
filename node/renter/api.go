package renter

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// HandleBid receives a sealed bid over lease.BidProto.
func (a *Renter) HandleBid(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	return a.handleBid(ctx, from, req)
}

// HandlePreempt receives a provider's sealed preemption notice over
// lease.PreemptProto.
func (a *Renter) HandlePreempt(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	return a.handlePreempt(ctx, from, req)
}

// ServeJob serves a provider's job-protocol request: the spec and the
// artifacts of a lease it holds with this renter.
func (a *Renter) ServeJob(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	return a.serveJob(ctx, from, req, send)
}

// Watch returns a job's events so far, then new ones, closing when the
// job ends or ctx ends.
func (a *Renter) Watch(ctx context.Context, jobID string) (<-chan store.JobEvent, error) {
	return a.jobs.watch(ctx, jobID)
}

// AddArtifact stores an artifact (a WASM module) that this renter's jobs
// name by CID, so that their providers can fetch it; it returns the CID.
func (a *Renter) AddArtifact(r io.Reader) (string, error) {
	id, err := a.artifacts.Put(r, lease.MaxModuleBytes)
	if err != nil {
		return "", fmt.Errorf("add artifact: %w", err)
	}
	return id, nil
}

// ResultBytesFetched counts the output bytes this renter received from
// providers (a resumed download fetches only what was missing).
func (a *Renter) ResultBytesFetched() int64 { return a.downloads.fetched.Load() }

// ResultCachePath is where a lease's downloaded output tar is cached.
func (a *Renter) ResultCachePath(leaseID string) string {
	return filepath.Join(a.downloads.dir, leaseID+".tar")
}

// Spend sums this renter's signed vouchers per day since since (a lease's
// pay counts on the day it started).
func (a *Renter) Spend(since time.Time) (api.Spend, error) {
	out := api.Spend{Since: since.UTC()}
	days := map[string]*api.SpendDay{}
	leases, err := a.db.Leases()
	if err != nil {
		return out, err
	}
	for _, l := range leases {
		if l.Side != lease.SideRenter || l.StartsAtMs < since.UnixMilli() {
			continue
		}
		d := time.UnixMilli(l.StartsAtMs).UTC().Format(time.DateOnly)
		if days[d] == nil {
			days[d] = &api.SpendDay{Day: d}
		}
		usd := float64(l.PaidMicro) / 1e6
		days[d].Leases++
		days[d].SpentUSD += usd
		days[d].GPUHours += workedGPUHours(l, a.now())
		out.TotalUSD += usd
	}
	for _, d := range days {
		out.Days = append(out.Days, *d)
	}
	slices.SortFunc(out.Days, func(a, b api.SpendDay) int { return strings.Compare(a.Day, b.Day) })
	return out, nil
}

// workedGPUHours is how long a lease's GPUs worked, in GPU-hours.
func workedGPUHours(l *store.Lease, now time.Time) float64 {
	if l.WorkStartedMs == 0 {
		return 0
	}
	end := l.WorkFinishedMs
	if end == 0 {
		end = now.UnixMilli()
	}
	return float64(len(l.GPUs)) * float64(max(0, end-l.WorkStartedMs)) / float64(time.Hour/time.Millisecond)
}
