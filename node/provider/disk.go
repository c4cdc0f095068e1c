package provider

import (
	"log/slog"
	"sync"
)

// diskGate stops the provider from bidding while its store is nearly
// full: a lease it won could not be stored, and the work would be done for
// nothing. It says so once when it closes and once when space returns.
type diskGate struct {
	// freeSpace is the store's free bytes and whether they are below
	// store.low_space_mib (store.DB.FreeSpace).
	freeSpace func() (free uint64, low bool, err error)
	log       *slog.Logger

	mu     sync.Mutex
	closed bool
}

func newDiskGate(freeSpace func() (uint64, bool, error), log *slog.Logger) *diskGate {
	return &diskGate{freeSpace: freeSpace, log: log}
}

// open reports whether the store has room for new leases.
func (g *diskGate) open() bool {
	free, low, err := g.freeSpace()
	if err != nil {
		return true // an unreadable free-space figure is no reason to stop
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case low && !g.closed:
		g.closed = true
		g.log.Warn("disk nearly full: not bidding until space is freed (store.low_space_mib)", "free_mib", free>>20)
	case !low && g.closed:
		g.closed = false
		g.log.Info("disk space back: bidding again", "free_mib", free>>20)
	}
	return !low
}

// low reports whether the store is short of space now, and so the
// provider is not bidding, with the free space in bytes.
func (g *diskGate) low() (low bool, free uint64) {
	free, low, err := g.freeSpace()
	if err != nil {
		return false, 0
	}
	return low, free
}
