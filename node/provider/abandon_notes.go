package provider

import (
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// abandonNotes are other providers' verified notes of awards that renters
// abandoned, counted per renter once per noting provider. A note costs
// its signer nothing but a key, and needs the renter's own award to that
// key, so each source (noting provider) counts for at most
// maxNotesPerSource renters an hour: a provider that notes more is noting
// renters it leased to for nothing, and its further notes are ignored.
type abandonNotes struct {
	// by: renter -> noting provider -> when it noted.
	by map[string]map[string]time.Time
	// sources: noting provider -> when its counted notes were made.
	sources map[string][]time.Time
}

// maxNotesPerSource bounds the renters one provider's notes count
// against within auction.AbandonNoteFor; maxNotedRenters bounds the
// renters followed (renters abandoned here, and noted by others).
const (
	maxNotesPerSource = 16
	maxNotedRenters   = 4096
	maxNoteSources    = 4096
)

func newAbandonNotes() *abandonNotes {
	return &abandonNotes{by: map[string]map[string]time.Time{}, sources: map[string][]time.Time{}}
}

// add counts source's note of renter made at at, unless source is over
// its bound or the note is stale at now. It reports whether it counted.
func (a *abandonNotes) add(source, renter string, at, now time.Time) bool {
	if now.Sub(at) > auction.AbandonNoteFor {
		return false
	}
	if _, ok := a.by[renter][source]; ok {
		a.by[renter][source] = at
		return true
	}
	recent := a.sources[source][:0]
	for _, t := range a.sources[source] {
		if now.Sub(t) <= auction.AbandonNoteFor {
			recent = append(recent, t)
		}
	}
	if len(recent) >= maxNotesPerSource {
		return false
	}
	if len(recent) == 0 {
		delete(a.sources, source)
		if len(a.sources) >= maxNoteSources {
			a.prune(now)
			if len(a.sources) >= maxNoteSources {
				return false
			}
		}
	}
	if a.by[renter] == nil {
		if len(a.by) >= maxNotedRenters {
			a.prune(now)
			if len(a.by) >= maxNotedRenters {
				return false
			}
		}
		a.by[renter] = map[string]time.Time{}
	}
	a.by[renter][source] = at
	a.sources[source] = append(recent, at)
	return true
}

// noted counts the providers whose notes of renter still count at now.
func (a *abandonNotes) noted(renter string, now time.Time) int {
	k := 0
	for _, at := range a.by[renter] {
		if now.Sub(at) <= auction.AbandonNoteFor {
			k++
		}
	}
	return k
}

// prune forgets notes past auction.AbandonNoteFor.
func (a *abandonNotes) prune(now time.Time) {
	for renter, srcs := range a.by {
		for s, at := range srcs {
			if now.Sub(at) > auction.AbandonNoteFor {
				delete(srcs, s)
			}
		}
		if len(srcs) == 0 {
			delete(a.by, renter)
		}
	}
	for s, ts := range a.sources {
		if len(ts) == 0 || now.Sub(ts[len(ts)-1]) > auction.AbandonNoteFor {
			delete(a.sources, s)
		}
	}
}
