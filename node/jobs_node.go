package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// ErrNotRenter is returned when a job is posted to a node that is not a
// renter.
var ErrNotRenter = errors.New("jobs are posted from a renter node")

// SubmitJob validates a YAML job spec and starts its auction; see
// docs/jobspec.md. Nothing is published for a spec that fails validation.
func (n *Node) SubmitJob(specYAML []byte) (*store.Job, error) {
	if n.auct == nil {
		return nil, ErrNotRenter
	}
	return n.auct.Submit(specYAML)
}

// Job returns a stored job.
func (n *Node) Job(id string) (*store.Job, error) { return n.db.GetJob(id) }

// Leases returns every lease this node holds a copy of.
func (n *Node) Leases() ([]*store.Lease, error) { return n.db.Leases() }

// RecentGossip returns the last messages this node received on a topic.
func (n *Node) RecentGossip(topic string) []p2p.Message {
	var out []p2p.Message
	for _, m := range n.gossip.recent(topic) {
		out = append(out, p2p.Message{Topic: m.Topic, Data: m.Data})
	}
	return out
}

// PriceIndex computes cleared prices per model and tier from the signed
// award summaries this node has received, over [since, until).
func (n *Node) PriceIndex(since, until time.Time) ([]auction.PriceStat, error) {
	raws, err := n.db.Summaries()
	if err != nil {
		return nil, err
	}
	var sums []auction.AwardSummary
	for _, raw := range raws {
		// Only signed summaries count; stored ones were verified on
		// arrival and are verified again, since the store is not a trust
		// boundary.
		if s, _, err := auction.OpenAwardSummary(raw); err == nil {
			sums = append(sums, *s)
		}
	}
	return auction.PriceStats(sums, since, until), nil
}

// AddArtifact stores an artifact (a WASM module) that this renter's jobs
// name by CID, so that their providers can fetch it; it returns the CID.
func (n *Node) AddArtifact(r io.Reader) (string, error) {
	id, err := n.artifacts.Put(r, maxModuleBytes)
	if err != nil {
		return "", fmt.Errorf("add artifact: %w", err)
	}
	return id, nil
}

// JobLogs copies a job's log from its provider to w (the named lease's, or
// the latest lease's); with follow, until the work ends or ctx ends.
func (n *Node) JobLogs(ctx context.Context, jobID, leaseID string, follow bool, w io.Writer) error {
	if n.auct == nil {
		return ErrNotRenter
	}
	return n.auct.Logs(ctx, jobID, leaseID, follow, w)
}

// JobResult downloads a finished job's output tar (verified against its
// CID) into the node's cache and returns the lease and the file.
func (n *Node) JobResult(ctx context.Context, jobID, leaseID string) (*store.Lease, string, error) {
	if n.auct == nil {
		return nil, "", ErrNotRenter
	}
	return n.auct.Result(ctx, jobID, leaseID)
}

// CancelJob stops a job's auction or work.
func (n *Node) CancelJob(ctx context.Context, jobID string) (*store.Job, error) {
	if n.auct == nil {
		return nil, ErrNotRenter
	}
	return n.auct.Cancel(ctx, jobID)
}

// ResultBytesFetched counts the output bytes this renter received from
// providers (a resumed download fetches only what was missing).
func (n *Node) ResultBytesFetched() int64 {
	if n.auct == nil {
		return 0
	}
	return n.auct.downloads.fetched.Load()
}

// ResultCachePath is where a lease's downloaded output tar is cached.
func (n *Node) ResultCachePath(leaseID string) string {
	return filepath.Join(n.auct.downloads.dir, leaseID+".tar")
}

// KeptOutputPath is where a provider keeps a finished lease's output tar
// for its renter ("" on other roles).
func (n *Node) KeptOutputPath(leaseID string) string {
	if n.ex == nil {
		return ""
	}
	return n.ex.outputPath(leaseID)
}

// Reputation is this node's score for a provider, from its own evidence.
func (n *Node) Reputation(provider string) reputation.Result { return n.rep.of(provider) }
