package executor

import (
	"fmt"
	"sync"
)

// Workloads is an executor's bookkeeping: the workloads it tracks by
// handle, whether it is closed, and the goroutines Close must wait for.
// Every implementation keeps the same rules (a closed executor takes no
// new workload and answers ErrClosed; a handle it does not track is
// ErrUnknownHandle), so they live here once. The zero value is ready to
// use; W is the implementation's workload type.
type Workloads[W any] struct {
	mu     sync.Mutex
	closed bool
	byH    map[Handle]W
	wg     sync.WaitGroup // goroutines started with Go
}

// Get returns h's workload; ErrClosed after Close, ErrUnknownHandle
// (naming h) for a handle never added or already deleted.
func (t *Workloads[W]) Get(h Handle) (W, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var zero W
	if t.closed {
		return zero, ErrClosed
	}
	w, ok := t.byH[h]
	if !ok {
		return zero, fmt.Errorf("%q: %w", h, ErrUnknownHandle)
	}
	return w, nil
}

// Has reports whether h is tracked, closed or not.
func (t *Workloads[W]) Has(h Handle) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.byH[h]
	return ok
}

// Add tracks w under h. After Close it tracks nothing and returns
// ErrClosed: the caller then releases w itself.
func (t *Workloads[W]) Add(h Handle, w W) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.byH == nil {
		t.byH = make(map[Handle]W)
	}
	t.byH[h] = w
	return nil
}

// Delete forgets h.
func (t *Workloads[W]) Delete(h Handle) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byH, h)
}

// Go runs fn in a goroutine that Wait waits for, unless the table is
// closed; it reports whether fn was started.
func (t *Workloads[W]) Go(fn func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Go(fn)
	return true
}

// Close marks the table closed and returns the workloads it tracks, which
// it keeps (Get answers ErrClosed from now on). Only the first call
// reports first; the executor's Close does its work only then.
func (t *Workloads[W]) Close() (tracked []W, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	t.closed = true
	tracked = make([]W, 0, len(t.byH))
	for _, w := range t.byH {
		tracked = append(tracked, w)
	}
	return tracked, true
}

// Wait waits for the goroutines started with Go.
func (t *Workloads[W]) Wait() { t.wg.Wait() }
