package lease

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/store"
)

// Parties is the set of peers this node holds a live (not terminal)
// lease with, kept up to date from the lease book's changes so that the
// p2p layer's protection test is a map lookup. Those peers are never
// trimmed by the connection manager nor evicted by admission: a flood of
// fresh identities must not cut a renter from the provider running its
// work. (Bootstrap peers are protected by the p2p layer itself.)
type Parties struct {
	mu      sync.RWMutex
	byLease map[string][2]peer.ID
	count   map[peer.ID]int
}

// NewParties returns an empty set.
func NewParties() *Parties {
	return &Parties{byLease: map[string][2]peer.ID{}, count: map[peer.ID]int{}}
}

// Load fills the set from the stored leases (once, at start).
func (s *Parties) Load(db *store.DB) error {
	ls, err := db.Leases()
	if err != nil {
		return err
	}
	for _, l := range ls {
		s.Changed(l)
	}
	return nil
}

// Changed records a lease's new state: a live lease protects both its
// parties, a terminal one no longer does.
func (s *Parties) Changed(l *store.Lease) {
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
	if State(l.State).Terminal() {
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

// Has reports whether p is a party of a live lease with this node.
func (s *Parties) Has(p peer.ID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return p != "" && s.count[p] > 0
}
