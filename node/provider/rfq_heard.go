package provider

import (
	"sync"
	"time"
)

// rfqsHeard are the RFQs this provider has answered lately, so that one
// RFQ reaching it on two topics is decided once: an RFQ for two GPU
// shards reaches a provider on both, and in a shard of several lots a
// provider follows its lot's topic beside the shard's (lots.go). Deciding
// it twice would cost the quote twice and could send two bids holding
// the same GPUs.
type rfqsHeard struct {
	mu    sync.Mutex
	until map[string]time.Time // RFQ record ID -> when its bid window is long over
}

// maxRFQsHeard bounds the RFQs remembered; past it the ones whose window
// is over go first, then any (a duplicate decided twice is harmless, only
// wasted).
const maxRFQsHeard = 4096

// first reports whether rfqID is heard for the first time at now, and
// remembers it until the RFQ expires (expires; at least a minute and at
// most rfqHeardFor from now, whatever the RFQ says).
func (h *rfqsHeard) first(rfqID string, now, expires time.Time) bool {
	until := min(max(expires.Sub(now), time.Minute), rfqHeardFor)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.until == nil {
		h.until = map[string]time.Time{}
	}
	if u, ok := h.until[rfqID]; ok && now.Before(u) {
		return false
	}
	if len(h.until) >= maxRFQsHeard {
		for id, u := range h.until {
			if !now.Before(u) {
				delete(h.until, id)
			}
		}
		for id := range h.until {
			if len(h.until) < maxRFQsHeard {
				break
			}
			delete(h.until, id)
		}
	}
	h.until[rfqID] = now.Add(until)
	return true
}

// rfqHeardFor bounds how long an RFQ is remembered: far past any bid
// window (auction.MaxBidWindow is seconds).
const rfqHeardFor = 10 * time.Minute
