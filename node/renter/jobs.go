package renter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// jobTracker persists jobs and their events and fans events out to
// watchers (the API's live progress stream).
type jobTracker struct {
	db  *store.DB
	now func() time.Time
	log *slog.Logger

	mu       sync.Mutex
	watchers map[string][]chan store.JobEvent
}

func newJobTracker(db *store.DB, now func() time.Time, log *slog.Logger) *jobTracker {
	return &jobTracker{db: db, now: now, log: log, watchers: map[string][]chan store.JobEvent{}}
}

// update applies fn to the stored job, appends ev (if Kind is set), saves
// durably and notifies watchers. A terminal job's watchers are released.
func (t *jobTracker) update(id string, ev store.JobEvent, fn func(j *store.Job)) (*store.Job, error) {
	return t.apply(id, []store.JobEvent{ev}, fn, true)
}

// record stores an event that watchers already saw live (notify), so it
// is not sent to them twice.
func (t *jobTracker) record(id string, ev store.JobEvent) {
	if _, err := t.apply(id, []store.JobEvent{ev}, nil, false); err != nil {
		t.lost(id, ev.Kind, err)
	}
}

// lost logs a job record that could not be written. The job's state on
// disk is then behind what this node did; the operator must hear of it
// (a full or failing disk), and the next write tries again.
func (t *jobTracker) lost(id, what string, err error) {
	t.log.Error("job record not written", "job", lease.Short(id), "what", what, "err", err)
}

// note is update for callers that have nothing to do on failure but make
// it known.
func (t *jobTracker) note(id string, ev store.JobEvent, fn func(j *store.Job)) {
	if _, err := t.update(id, ev, fn); err != nil {
		t.lost(id, ev.Kind, err)
	}
}

// notes is note for several events in one write: each rewrites the whole
// job record, durably, under the tracker's lock, so a path that must be
// quick (an award) writes its events together.
func (t *jobTracker) notes(id string, evs []store.JobEvent, fn func(j *store.Job)) {
	if _, err := t.apply(id, evs, fn, true); err != nil {
		t.lost(id, evs[len(evs)-1].Kind, err)
	}
}

// set is setState for callers that have nothing to do on failure but
// make it known.
func (t *jobTracker) set(id, state, kind, format string, a ...any) {
	if _, err := t.setState(id, state, kind, format, a...); err != nil {
		t.lost(id, kind, err)
	}
}

func (t *jobTracker) apply(id string, evs []store.JobEvent, fn func(j *store.Job), notify bool) (*store.Job, error) {
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
	var added []store.JobEvent
	for _, ev := range evs {
		if ev.Kind == "" {
			continue
		}
		if ev.AtMs == 0 {
			ev.AtMs = now
		}
		added = append(added, ev)
	}
	if len(added) > 0 {
		j.Events = keepJobEvents(append(j.Events, added...))
	}
	j.UpdatedAtMs = now
	if err := t.db.PutJob(j); err != nil {
		return nil, err
	}
	for _, w := range t.watchers[id] {
		for i := 0; notify && i < len(added); i++ {
			select {
			case w <- added[i]:
			default: // a slow watcher misses progress, never blocks the auction
			}
		}
		if lease.JobState(j.State).Terminal() {
			close(w)
		}
	}
	if lease.JobState(j.State).Terminal() {
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
	t.note(id, store.JobEvent{Kind: kind, Message: fmt.Sprintf(format, a...)}, nil)
}

func (t *jobTracker) setState(id, state, kind, format string, a ...any) (*store.Job, error) {
	msg := fmt.Sprintf(format, a...)
	return t.update(id, store.JobEvent{Kind: kind, Message: msg}, func(j *store.Job) {
		j.State = state
		if lease.JobState(state).Terminal() || state == lease.JobPreempted {
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
	if lease.JobState(j.State).Terminal() {
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

// A job's stored events are bounded: a job that waits a day for a plan,
// or whose providers keep declining, must not grow its record without
// end. Over maxJobEvents, the first jobEventsHead (submission, first
// auctions) and the latest are kept, with one `elided` event between them
// counting what was dropped.
const (
	maxJobEvents  = 400
	jobEventsHead = 100
)

func keepJobEvents(evs []store.JobEvent) []store.JobEvent {
	if len(evs) <= maxJobEvents {
		return evs
	}
	dropped := len(evs) - maxJobEvents + 1 // one slot for the marker
	first := jobEventsHead
	if m := evs[jobEventsHead]; m.Kind == "elided" {
		var before int
		if _, err := fmt.Sscanf(m.Message, "%d", &before); err == nil {
			dropped += before - 1 // the old marker is among the dropped
		}
	}
	out := make([]store.JobEvent, 0, maxJobEvents)
	out = append(out, evs[:first]...)
	out = append(out, store.JobEvent{AtMs: evs[first].AtMs, Kind: "elided", Message: fmt.Sprintf("%d events not kept (a job keeps its first %d and latest %d)", dropped, jobEventsHead, maxJobEvents-jobEventsHead-1)})
	return append(out, evs[len(evs)-(maxJobEvents-first-1):]...)
}
