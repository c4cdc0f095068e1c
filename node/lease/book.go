package lease

import (
	"context"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/store"
)

// Book is the one writer of lease records after they are created: an
// update reads, changes and durably writes a lease under one lock, bumps
// its version and wakes whoever waits for a change (a renter long-polling
// the provider's status, a local API follower).
type Book struct {
	db  *store.DB
	now func() time.Time

	mu       sync.Mutex
	changed  map[string]chan struct{} // closed and replaced on every change
	onChange func(l *store.Lease)
}

// OnChange installs fn to be told of every lease written, after the write
// and under the book's lock: fn must be quick and must not call the book.
// Call it before the book is used.
func (b *Book) OnChange(fn func(l *store.Lease)) { b.onChange = fn }

// NewBook returns the lease book over db; now dates each change.
func NewBook(db *store.DB, now func() time.Time) *Book {
	if now == nil {
		now = time.Now
	}
	return &Book{db: db, now: now, changed: map[string]chan struct{}{}}
}

// Put stores a new or replaced lease as a change.
func (b *Book) Put(l *store.Lease) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.write(l)
}

func (b *Book) write(l *store.Lease) error {
	l.Version++
	l.UpdatedAtMs = b.now().UnixMilli()
	if err := b.db.PutLease(l); err != nil {
		return err
	}
	if ch, ok := b.changed[l.ID]; ok {
		close(ch)
		delete(b.changed, l.ID)
	}
	if b.onChange != nil {
		b.onChange(l)
	}
	return nil
}

// Update applies fn to the stored lease and saves it. fn returning false
// leaves the lease unchanged (and unwritten).
func (b *Book) Update(id string, fn func(l *store.Lease) bool) (*store.Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.db.GetLease(id)
	if err != nil {
		return nil, err
	}
	if !fn(l) {
		return l, nil
	}
	if err := b.write(l); err != nil {
		return nil, err
	}
	return l, nil
}

// Finish records a lease's final state. A terminal lease keeps its first
// outcome; the stored lease is returned either way.
func (b *Book) Finish(id, state, reason string, more func(l *store.Lease)) (*store.Lease, bool, error) {
	done := false
	l, err := b.Update(id, func(l *store.Lease) bool {
		if State(l.State).Terminal() {
			return false
		}
		l.State, l.Reason = state, reason
		if more != nil {
			more(l)
		}
		done = true
		return true
	})
	return l, done, err
}

// Wait returns the lease once its version exceeds after, or the current
// lease when ctx ends first.
func (b *Book) Wait(ctx context.Context, id string, after uint64) (*store.Lease, error) {
	for {
		b.mu.Lock()
		l, err := b.db.GetLease(id)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		if l.Version > after {
			b.mu.Unlock()
			return l, nil
		}
		ch, ok := b.changed[id]
		if !ok {
			ch = make(chan struct{})
			b.changed[id] = ch
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return l, nil
		case <-ch:
		}
	}
}
