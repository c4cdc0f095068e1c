package store

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"
)

// Uptime is what a node observed of a provider's heartbeats.
type Uptime struct {
	Provider string `json:"provider"`
	FirstMs  int64  `json:"first_ms"`
	LastMs   int64  `json:"last_ms"`
	Seen     uint64 `json:"seen"`
}

// UptimeStale is how long a provider's row may go unheard before it is
// the first to make room past the bound (ObserveHeartbeat).
const UptimeStale = 30 * 24 * time.Hour

// uptimeRows serialises the heartbeat rows' updates, and counts the rows
// so that the bound costs nothing until it is reached.
type uptimeRows struct {
	mu      sync.Mutex
	counted bool
	n       int
}

// ObserveHeartbeat counts one heartbeat of a provider at atMs, keeping at
// most limit providers' rows. Past the bound a new provider's row makes
// room by dropping an eighth of them: first those not heard from for
// UptimeStale (the longest unheard first), then those with the fewest
// heartbeats seen (a key that got a capacity record checked and
// heartbeats a while has little, a provider of years much), then the
// longest unheard.
func (d *DB) ObserveHeartbeat(provider string, atMs int64, limit int) error {
	d.uptimes.mu.Lock()
	defer d.uptimes.mu.Unlock()
	var u Uptime
	err := d.getJSON("store.ObserveHeartbeat", uptimePrefix+provider, &u)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	fresh := u.Provider == ""
	if fresh {
		if err := d.roomForUptimeLocked(limit, atMs); err != nil {
			return err
		}
		u = Uptime{Provider: provider, FirstMs: atMs}
	}
	u.LastMs = max(u.LastMs, atMs)
	u.Seen++
	if err := d.putJSON("store.ObserveHeartbeat", uptimePrefix+provider, &u, false); err != nil {
		return err
	}
	if fresh {
		d.uptimes.n++
	}
	return nil
}

// roomForUptimeLocked makes room for one more row under limit; the caller
// holds d.uptimes.mu.
func (d *DB) roomForUptimeLocked(limit int, nowMs int64) error {
	if !d.uptimes.counted {
		ids, err := d.idsUnder("store.ObserveHeartbeat", uptimePrefix)
		if err != nil {
			return err
		}
		d.uptimes.n, d.uptimes.counted = len(ids), true
	}
	if d.uptimes.n < limit {
		return nil
	}
	ups, err := d.Uptimes()
	if err != nil {
		return err
	}
	staleBefore := nowMs - UptimeStale.Milliseconds()
	slices.SortFunc(ups, func(a, b *Uptime) int {
		if sa, sb := a.LastMs < staleBefore, b.LastMs < staleBefore; sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		if sa := a.LastMs < staleBefore; !sa && a.Seen != b.Seen {
			return cmp.Compare(a.Seen, b.Seen)
		}
		return cmp.Compare(a.LastMs, b.LastMs)
	})
	keep := max(limit-1-limit/8, 0)
	var drop []string
	for _, u := range ups[:max(len(ups)-keep, 0)] {
		drop = append(drop, u.Provider)
	}
	if err := d.deleteUnder("store.ObserveHeartbeat", uptimePrefix, drop); err != nil {
		return err
	}
	d.uptimes.n = len(ups) - len(drop)
	return nil
}

// Uptimes returns every provider's heartbeat observations.
func (d *DB) Uptimes() ([]*Uptime, error) {
	var out []*Uptime
	err := scanJSON(d, "store.Uptimes", uptimePrefix, func(u *Uptime) { out = append(out, u) })
	return out, err
}
