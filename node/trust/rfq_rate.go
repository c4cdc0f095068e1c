package trust

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The RFQ rate each renter ID gets at every node's validator: a renter
// that posts faster has the excess ignored (not forwarded, no penalty), so
// one key cannot make every provider quote for it without bound. renters
// bounds the memory: the least recently seen renter is forgotten first
// (it starts again with a full burst, as a fresh key would).
const (
	rfqRatePerSec = 5
	rfqRateBurst  = 50
	rfqRateRenter = 10_000
)

// renterRate is a token bucket per renter ID, in a bounded LRU. It takes
// the time as a value, so tests drive it without a clock.
type renterRate struct {
	limit   rate.Limit
	burst   int
	renters int

	mu    sync.Mutex
	order *list.List // of *renterBucket, most recently seen first
	by    map[string]*list.Element
}

type renterBucket struct {
	renter string
	lim    *rate.Limiter
}

func newRenterRate(perSec float64, burst, renters int) *renterRate {
	return &renterRate{
		limit: rate.Limit(perSec), burst: burst, renters: max(renters, 1),
		order: list.New(), by: map[string]*list.Element{},
	}
}

// allow takes one token of renter's bucket at now. A nil renterRate
// allows everything (a node built without one, in unit tests).
func (r *renterRate) allow(renter string, now time.Time) bool {
	if r == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.by[renter]
	if ok {
		r.order.MoveToFront(e)
	} else {
		if r.order.Len() >= r.renters {
			oldest := r.order.Back()
			delete(r.by, oldest.Value.(*renterBucket).renter)
			r.order.Remove(oldest)
		}
		e = r.order.PushFront(&renterBucket{renter: renter, lim: rate.NewLimiter(r.limit, r.burst)})
		r.by[renter] = e
	}
	return e.Value.(*renterBucket).lim.AllowN(now, 1)
}

// tracked is how many renters have a bucket.
func (r *renterRate) tracked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.order.Len()
}
