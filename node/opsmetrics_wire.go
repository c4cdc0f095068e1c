package node

import (
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/node/opsmetrics"
)

// opsMetrics registers the provider's operator metrics (GPU health,
// leases, disk) on the node's registry.
func (n *Node) opsMetrics() (*opsmetrics.Metrics, error) {
	m, err := opsmetrics.New(n.reg, opsmetrics.Deps{
		Logger: n.log.With("component", "opsmetrics"), GPU: n.gpus, Leases: n.db.Leases, FreeSpace: n.db.FreeSpace,
		Clock: time.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("ops metrics: %w", err)
	}
	return m, nil
}
