package trust

import (
	"container/list"
	"sync"
	"time"
)

// budgets are token buckets by key (a peer, a network, "all"), in a
// bounded LRU: a key not seen for long is forgotten first, and starts
// again with a full bucket, as a fresh key would. Tokens can be given
// back (up to the burst), so a budget can count work still outstanding:
// a source's new providers are taken from its budget and given back once
// their records check out. It takes the time as a value.
type budgets struct {
	rate  float64 // tokens per second
	burst float64
	keys  int

	mu    sync.Mutex
	order *list.List // of *bucket, most recently used first
	by    map[string]*list.Element
}

type bucket struct {
	key    string
	tokens float64
	at     time.Time
}

func newBudgets(perSec float64, burst, keys int) *budgets {
	return &budgets{rate: perSec, burst: float64(burst), keys: max(keys, 1), order: list.New(), by: map[string]*list.Element{}}
}

// get returns key's bucket, refilled to now. Callers hold b.mu.
func (b *budgets) get(key string, now time.Time) *bucket {
	e, ok := b.by[key]
	if ok {
		b.order.MoveToFront(e)
	} else {
		if b.order.Len() >= b.keys {
			oldest := b.order.Back()
			delete(b.by, oldest.Value.(*bucket).key)
			b.order.Remove(oldest)
		}
		e = b.order.PushFront(&bucket{key: key, tokens: b.burst, at: now})
		b.by[key] = e
	}
	k := e.Value.(*bucket)
	if now.After(k.at) {
		k.tokens = min(b.burst, k.tokens+now.Sub(k.at).Seconds()*b.rate)
		k.at = now
	}
	return k
}

// take takes one token from each key's bucket, or none if any is empty.
func (b *budgets) take(now time.Time, keys ...string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, key := range keys {
		if b.get(key, now).tokens < 1 {
			return false
		}
	}
	for _, key := range keys {
		b.get(key, now).tokens--
	}
	return true
}

// has reports whether key's bucket holds a token, taking none.
func (b *budgets) has(now time.Time, key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.get(key, now).tokens >= 1
}

// give returns one token to each key's bucket.
func (b *budgets) give(now time.Time, keys ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, key := range keys {
		k := b.get(key, now)
		k.tokens = min(b.burst, k.tokens+1)
	}
}

// tracked is how many keys have a bucket.
func (b *budgets) tracked() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.order.Len()
}
