package renter

import (
	"context"
	"errors"
	"sync"
)

// errNotRunning is returned when work is started before Run or after its
// context ended.
var errNotRunning = errors.New("the node is not running")

// background runs the room's goroutines (auctions, payers, timers,
// forwards) on Run's context, so that Run waits for them before it
// returns.
type background struct {
	mu  sync.Mutex
	ctx context.Context // set by start
	wg  sync.WaitGroup
}

// start gives the background Run's context.
func (b *background) start(ctx context.Context) {
	b.mu.Lock()
	b.ctx = ctx
	b.mu.Unlock()
}

// running reports whether start was called.
func (b *background) running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ctx != nil
}

// Go starts fn on Run's context; it refuses before Run and after its
// context ended.
func (b *background) Go(fn func(ctx context.Context)) error {
	b.mu.Lock()
	ctx := b.ctx
	b.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return errNotRunning
	}
	b.wg.Go(func() { fn(ctx) })
	return nil
}

// track runs fn as part of the background whatever the context's state
// (fn is given the context it needs by its caller).
func (b *background) track(fn func()) { b.wg.Go(fn) }

// wait waits for every goroutine started.
func (b *background) wait() { b.wg.Wait() }
