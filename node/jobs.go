package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/store"
)

// Job states (renter side).
const (
	JobAuctioning = "auctioning"
	JobRunning    = "running"
	JobPreempted  = "preempted"
	JobCompleted  = "completed"
	JobFailed     = "failed"
	JobUnfilled   = "unfilled"
	JobCancelled  = "cancelled"
	JobExpired    = "expired"
)

func terminalJob(state string) bool {
	switch state {
	case JobCompleted, JobFailed, JobUnfilled, JobCancelled, JobExpired:
		return true
	}
	return false
}

// jobTracker persists jobs and their events and fans events out to
// watchers (the API's live progress stream).
type jobTracker struct {
	db  *store.DB
	now func() time.Time

	mu       sync.Mutex
	watchers map[string][]chan store.JobEvent
}

func newJobTracker(db *store.DB) *jobTracker {
	return &jobTracker{db: db, now: time.Now, watchers: map[string][]chan store.JobEvent{}}
}

// update applies fn to the stored job, appends ev (if Kind is set), saves
// durably and notifies watchers. A terminal job's watchers are released.
func (t *jobTracker) update(id string, ev store.JobEvent, fn func(j *store.Job)) (*store.Job, error) {
	return t.apply(id, ev, fn, true)
}

// record stores an event that watchers already saw live (notify), so it
// is not sent to them twice.
func (t *jobTracker) record(id string, ev store.JobEvent) {
	_, _ = t.apply(id, ev, nil, false)
}

func (t *jobTracker) apply(id string, ev store.JobEvent, fn func(j *store.Job), notify bool) (*store.Job, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j, err := t.db.GetJob(id)
	if err != nil {
		return nil, err
	}
	now := t.now().UnixMilli()
	if fn != nil {
		fn(j)
	}
	if ev.Kind != "" {
		if ev.AtMs == 0 {
			ev.AtMs = now
		}
		j.Events = append(j.Events, ev)
	}
	j.UpdatedAtMs = now
	if err := t.db.PutJob(j); err != nil {
		return nil, err
	}
	for _, w := range t.watchers[id] {
		if ev.Kind != "" && notify {
			select {
			case w <- ev:
			default: // a slow watcher misses progress, never blocks the auction
			}
		}
		if terminalJob(j.State) {
			close(w)
		}
	}
	if terminalJob(j.State) {
		delete(t.watchers, id)
	}
	return j, nil
}

// notify sends an event to the job's watchers without storing it. Bids
// are shown live this way: storing each would rewrite the job record once
// per bid, and the "window" event keeps their count and best price.
func (t *jobTracker) notify(id string, ev store.JobEvent) {
	ev.AtMs = t.now().UnixMilli()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.watchers[id] {
		select {
		case w <- ev:
		default:
		}
	}
}

func (t *jobTracker) event(id, kind, format string, a ...any) {
	_, _ = t.update(id, store.JobEvent{Kind: kind, Message: fmt.Sprintf(format, a...)}, nil)
}

func (t *jobTracker) setState(id, state, kind, format string, a ...any) (*store.Job, error) {
	msg := fmt.Sprintf(format, a...)
	return t.update(id, store.JobEvent{Kind: kind, Message: msg}, func(j *store.Job) {
		j.State = state
		if terminalJob(state) || state == JobPreempted {
			j.Reason = msg
		}
	})
}

func (t *jobTracker) create(j *store.Job) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.db.GetJob(j.ID); err == nil {
		return fmt.Errorf("job %s already exists", j.ID)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return t.db.PutJob(j)
}

// watch returns the job's events so far, then new ones, closing when the
// job is terminal or ctx ends.
func (t *jobTracker) watch(ctx context.Context, id string) (<-chan store.JobEvent, error) {
	t.mu.Lock()
	j, err := t.db.GetJob(id)
	if err != nil {
		t.mu.Unlock()
		return nil, err
	}
	past := slices.Clone(j.Events)
	out := make(chan store.JobEvent, len(past)+64)
	for _, ev := range past {
		out <- ev
	}
	if terminalJob(j.State) {
		close(out)
		t.mu.Unlock()
		return out, nil
	}
	live := make(chan store.JobEvent, 64)
	t.watchers[id] = append(t.watchers[id], live)
	t.mu.Unlock()
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				t.unwatch(id, live)
				return
			case ev, ok := <-live:
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					t.unwatch(id, live)
					return
				}
			}
		}
	}()
	return out, nil
}

func (t *jobTracker) unwatch(id string, ch chan store.JobEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watchers[id] = slices.DeleteFunc(t.watchers[id], func(c chan store.JobEvent) bool { return c == ch })
}
