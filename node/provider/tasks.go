package provider

import (
	"context"
	"sync"
)

// tasks runs the room's background work that outlives the call asking for
// it (receipts, preemption notices) on the room's lifetime: work given
// before Run or after Run's end is dropped (a restart issues what was
// owed; see leaseRunner.resume).
type tasks struct {
	mu     sync.Mutex
	ctx    context.Context
	closed bool
	wg     sync.WaitGroup
}

// start opens the group on the room's context.
func (t *tasks) start(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ctx = ctx
}

// spawn runs fn on the room's context.
func (t *tasks) spawn(fn func(ctx context.Context)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil || t.closed {
		return
	}
	ctx := t.ctx
	t.wg.Go(func() { fn(ctx) })
}

// wait closes the group and waits for the work in it.
func (t *tasks) wait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}
