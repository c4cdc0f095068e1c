package node

import (
	"errors"
	"time"

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
