package node

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// leaseParties is the set of peers this node holds a live (not terminal)
// lease with, kept up to date from the lease book's changes so that the
// p2p layer's protection test is a map lookup. Those peers are never
// trimmed by the connection manager nor evicted by admission: a flood of
// fresh identities must not cut a renter from the provider running its
// work. (Bootstrap peers are protected by the p2p layer itself.)
type leaseParties struct {
	mu      sync.RWMutex
	byLease map[string][2]peer.ID
	count   map[peer.ID]int
}

func newLeaseParties() *leaseParties {
	return &leaseParties{byLease: map[string][2]peer.ID{}, count: map[peer.ID]int{}}
}

// load fills the set from the stored leases (once, at start).
func (s *leaseParties) load(db *store.DB) error {
	ls, err := db.Leases()
	if err != nil {
		return err
	}
	for _, l := range ls {
		s.changed(l)
	}
	return nil
}

// changed records a lease's new state: a live lease protects both its
// parties, a terminal one no longer does.
func (s *leaseParties) changed(l *store.Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byLease[l.ID]; ok {
		for _, p := range old {
			if s.count[p]--; s.count[p] <= 0 {
				delete(s.count, p)
			}
		}
		delete(s.byLease, l.ID)
	}
	if lease.State(l.State).Terminal() {
		return
	}
	var parties [2]peer.ID
	for i, id := range []string{l.Renter, l.Provider} {
		if p, err := peer.Decode(id); err == nil {
			parties[i] = p
		}
	}
	s.byLease[l.ID] = parties
	for _, p := range parties {
		s.count[p]++
	}
}

// has reports whether p is a party of a live lease with this node.
func (s *leaseParties) has(p peer.ID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return p != "" && s.count[p] > 0
}

// protectLeaseParties makes the p2p layer protect this node's lease
// counterparties.
func (n *Node) protectLeaseParties() error {
	parties := newLeaseParties()
	n.leases.OnChange(parties.changed)
	if err := parties.load(n.db); err != nil {
		return err
	}
	n.p2p.SetProtected(parties.has)
	n.parties = parties
	return nil
}
