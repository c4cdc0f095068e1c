package node

import "github.com/idlegrid/idlegrid/node/lease"

// protectLeaseParties makes the p2p layer protect this node's lease
// counterparties.
func (n *Node) protectLeaseParties() error {
	parties := lease.NewParties()
	n.leases.OnChange(parties.Changed)
	if err := parties.Load(n.db); err != nil {
		return err
	}
	n.p2p.SetProtected(parties.Has)
	n.parties = parties
	return nil
}
