package provider

import "sync"

// diskGate stops the provider from bidding while its store is nearly
// full: a lease it won could not be stored, and the work would be done for
// nothing. It says so once when it closes and once when space returns.
type diskGate struct {
	mu     sync.Mutex
	closed bool
}

// diskOpen reports whether the store has room for new leases.
func (p *Provider) diskOpen() bool {
	free, low, err := p.db.FreeSpace()
	if err != nil {
		return true // an unreadable free-space figure is no reason to stop
	}
	g := &p.disk
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case low && !g.closed:
		g.closed = true
		p.log.Warn("disk nearly full: not bidding until space is freed (store.low_space_mib)", "free_mib", free>>20)
	case !low && g.closed:
		g.closed = false
		p.log.Info("disk space back: bidding again", "free_mib", free>>20)
	}
	return !low
}

// DiskLow reports whether the store is short of space now, and so the
// provider is not bidding, with the free space in bytes (status says so).
func (p *Provider) DiskLow() (low bool, free uint64) {
	free, low, err := p.db.FreeSpace()
	if err != nil {
		return false, 0
	}
	return low, free
}
