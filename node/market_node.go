package node

import (
	"context"
	"fmt"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/libp2p/go-libp2p/core/peer"
)

// LeaseGPU marks one of this provider's GPUs leased; the capacity record
// is re-published at once without it. It is the seam the auction's lease
// flow calls.
func (n *Node) LeaseGPU(uuid, leaseID string) error {
	if n.adv == nil {
		return ErrNotAdvertiser
	}
	return n.adv.Lease(uuid, leaseID)
}

// ReleaseGPU frees a leased GPU and re-publishes.
func (n *Node) ReleaseGPU(uuid string) error {
	if n.adv == nil {
		return ErrNotAdvertiser
	}
	return n.adv.Release(uuid)
}

// Capacity is the provider's last published record (nil before the first
// publish and on other roles).
func (n *Node) Capacity() *auction.Capacity {
	if n.adv == nil {
		return nil
	}
	return n.adv.Current()
}

// GPUs is the provider's GPU backend (nil on other roles).
func (n *Node) GPUs() gpu.Backend { return n.gpus }

// Search parses a market query and runs it over the providers found in the
// DHT. A malformed query or sort key returns a *query.Error.
func (n *Node) Search(ctx context.Context, q, sortBy string, limit int, explain bool) (SearchResult, error) {
	parsed, err := query.Parse(q)
	if err != nil {
		return SearchResult{}, err
	}
	key, err := query.ParseSort(sortBy)
	if err != nil {
		return SearchResult{}, err
	}
	return n.market.search(ctx, parsed, key, limit, explain)
}

// ProviderRecord fetches and verifies one provider's capacity record.
func (n *Node) ProviderRecord(ctx context.Context, id peer.ID) (*auction.Capacity, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Market.SearchTimeout)
	defer cancel()
	if err := n.p2p.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("provider record: %w", err)
	}
	return n.market.record(ctx, id)
}

// ReliabilityPrior is the reliability given to providers without history.
func (n *Node) ReliabilityPrior() float64 { return n.cfg.Market.ReliabilityPrior }
