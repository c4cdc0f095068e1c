package hostile

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Flooder holds a connection flood: one fresh identity (its own host) per
// connection, all dialing one target and keeping their connections.
type Flooder struct {
	mu    sync.Mutex
	hosts []host.Host
	ids   map[peer.ID]bool

	dialed, failed atomic.Int64
	done           chan struct{}
	cancel         context.CancelFunc
	closeOnce      sync.Once
}

// Flood dials target from n fresh identities, perSecond at most (0: as
// fast as the dials go), in the background. Each identity is passed to
// onIdentity (may be nil) before it dials, so a test can tell flood peers
// from others. Close ends it and closes every identity.
func Flood(ctx context.Context, target peer.AddrInfo, n int, perSecond float64, onIdentity func(peer.ID)) *Flooder {
	ctx, cancel := context.WithCancel(ctx)
	f := &Flooder{done: make(chan struct{}), cancel: cancel, ids: map[peer.ID]bool{}}
	go func() {
		defer close(f.done)
		var tick <-chan time.Time
		if perSecond > 0 {
			t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
			defer t.Stop()
			tick = t.C
		}
		var wg sync.WaitGroup
		defer wg.Wait()
		for range n {
			if tick != nil {
				select {
				case <-ctx.Done():
					return
				case <-tick:
				}
			} else if ctx.Err() != nil {
				return
			}
			h, err := newHost(false)
			if err != nil {
				f.failed.Add(1)
				continue
			}
			f.mu.Lock()
			f.hosts = append(f.hosts, h)
			f.ids[h.ID()] = true
			f.mu.Unlock()
			if onIdentity != nil {
				onIdentity(h.ID())
			}
			wg.Go(func() {
				dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
				defer dcancel()
				if err := h.Connect(dctx, target); err != nil {
					f.failed.Add(1)
					return
				}
				f.dialed.Add(1)
			})
		}
	}()
	return f
}

// Wait blocks until every identity has dialed (or failed) or ctx ends.
func (f *Flooder) Wait(ctx context.Context) error {
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dialed and Failed count the identities whose dial succeeded or failed.
func (f *Flooder) Dialed() int { return int(f.dialed.Load()) }
func (f *Flooder) Failed() int { return int(f.failed.Load()) }

// Has reports whether p is one of the flood's identities.
func (f *Flooder) Has(p peer.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[p]
}

// Connected counts the identities still connected to target.
func (f *Flooder) Connected(target peer.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := 0
	for _, h := range f.hosts {
		if h.Network().Connectedness(target) == network.Connected {
			c++
		}
	}
	return c
}

// Close stops the flood and closes every identity.
func (f *Flooder) Close() error {
	var errs []error
	f.closeOnce.Do(func() {
		f.cancel()
		<-f.done
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, h := range f.hosts {
			if err := h.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// Newcomer is an honest peer's first try to join: a fresh identity dials
// target once. It returns the host (the caller closes it) and the dial's
// error.
func Newcomer(ctx context.Context, target peer.AddrInfo) (host.Host, error) {
	h, err := newHost(false)
	if err != nil {
		return nil, err
	}
	return h, h.Connect(ctx, target)
}
