package auction

import (
	"cmp"
	"slices"
	"time"
)

// Bounds of ModelAsks: what one provider remembers of the models RFQs
// asked it for. Renters' keys are free, so each bound caps what a flood of
// RFQs can make a provider keep.
const (
	// MaxModelAsks bounds the models remembered; the least recently
	// asked is forgotten first.
	MaxModelAsks = 64
	// MaxAskRenters bounds the renters counted per model; the least
	// recent asker is forgotten first.
	MaxAskRenters = 32
)

// ModelAsk is one model RFQs asked for, as ModelAsks.Popular reports it.
type ModelAsk struct {
	Model   ModelRef
	Renters int       // distinct renters that asked within the window
	LastAt  time.Time // the latest ask
}

// ModelAsks is a bounded record of the models a provider was asked for:
// per model, the renters that asked and when. A provider pre-stages the
// models many renters ask for, so the next auction finds it warm. It
// holds no clock: the caller passes the time. Not safe for concurrent
// use.
type ModelAsks struct {
	models map[string]*modelAsks
}

type modelAsks struct {
	size    uint64
	last    time.Time
	renters map[string]time.Time
}

// NewModelAsks returns an empty record.
func NewModelAsks() *ModelAsks { return &ModelAsks{models: map[string]*modelAsks{}} }

// Note records that renter asked for m at now. The size kept is the
// latest asked (a renter cannot grow another's ask: pre-staging caps the
// size it downloads).
func (a *ModelAsks) Note(m ModelRef, renter string, now time.Time) {
	e := a.models[m.ID]
	if e == nil {
		if len(a.models) >= MaxModelAsks {
			a.forgetOldest()
		}
		e = &modelAsks{renters: map[string]time.Time{}}
		a.models[m.ID] = e
	}
	e.size, e.last = m.SizeMiB, now
	if _, ok := e.renters[renter]; !ok && len(e.renters) >= MaxAskRenters {
		delete(e.renters, oldestKey(e.renters))
	}
	e.renters[renter] = now
}

func (a *ModelAsks) forgetOldest() {
	var oldest string
	for id, e := range a.models {
		if oldest == "" || e.last.Before(a.models[oldest].last) || e.last.Equal(a.models[oldest].last) && id < oldest {
			oldest = id
		}
	}
	delete(a.models, oldest)
}

func oldestKey(m map[string]time.Time) string {
	var oldest string
	for k, t := range m {
		if oldest == "" || t.Before(m[oldest]) || t.Equal(m[oldest]) && k < oldest {
			oldest = k
		}
	}
	return oldest
}

// Popular lists the models at most maxSizeMiB that at least minRenters
// distinct renters asked for within window before now, the most asked
// first (then the most recent, then by ID).
func (a *ModelAsks) Popular(now time.Time, window time.Duration, minRenters int, maxSizeMiB uint64) []ModelAsk {
	var out []ModelAsk
	since := now.Add(-window)
	for id, e := range a.models {
		if e.size > maxSizeMiB || e.last.Before(since) {
			continue
		}
		n := 0
		for _, t := range e.renters {
			if !t.Before(since) {
				n++
			}
		}
		if n >= max(minRenters, 1) {
			out = append(out, ModelAsk{Model: ModelRef{ID: id, SizeMiB: e.size}, Renters: n, LastAt: e.last})
		}
	}
	slices.SortFunc(out, func(x, y ModelAsk) int {
		return cmp.Or(cmp.Compare(y.Renters, x.Renters), y.LastAt.Compare(x.LastAt), cmp.Compare(x.Model.ID, y.Model.ID))
	})
	return out
}
