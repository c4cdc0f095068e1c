package auction

import "time"

// WantedBids returns how many bids r asks for: WantBids, or
// DefaultWantBids when unset, never more than MaxWantBids.
func (r *RFQ) WantedBids() int {
	if r.WantBids == 0 {
		return DefaultWantBids
	}
	return int(min(r.WantBids, MaxWantBids))
}

// Timeliness is how an RFQ's dates look to a validator at its now.
type Timeliness int

// Timeliness classes.
const (
	// RFQTimely: issued no later than now+skew and not expired.
	RFQTimely Timeliness = iota
	// RFQExpired: expired, but recently enough that an honest relay (with
	// a clock up to skew behind, or serving it from its gossip cache up
	// to seenTTL late) may still have forwarded it. Ignore it: not an
	// invalid delivery to gossipsub, only the abuse guard's point for
	// work done for nothing (p2p.Ignore).
	RFQExpired
	// RFQStale: expired by more than seenTTL + skew. No honest relay
	// forwards that (each drops expired RFQs, and the gossip seen-cache has
	// long forgotten it), so the forwarding peer re-injected it: reject.
	RFQStale
	// RFQFuture: dated more than skew ahead of now. An honest renter's
	// clock is within skew, and relays validate before forwarding: reject.
	RFQFuture
)

// String names the class for logs and metrics.
func (t Timeliness) String() string {
	switch t {
	case RFQTimely:
		return "timely"
	case RFQExpired:
		return "expired"
	case RFQStale:
		return "stale"
	case RFQFuture:
		return "future"
	}
	return "unknown"
}

// Timeliness classifies r at now for a validator that tolerates clock
// skew and whose gossip router remembers message IDs for seenTTL (the
// router's seen-cache time, 120 s in idlegrid; docs/protocol.md §3.1).
// skew is the largest clock difference between two honest peers the
// validator allows. Negative durations count as 0.
func (r *RFQ) Timeliness(now time.Time, skew, seenTTL time.Duration) Timeliness {
	skewMs, ttlMs := max(skew, 0).Milliseconds(), max(seenTTL, 0).Milliseconds()
	nowMs := now.UnixMilli()
	switch {
	case r.IssuedAtMs > nowMs+skewMs:
		return RFQFuture
	case nowMs >= r.ExpiresAtMs+ttlMs+skewMs:
		return RFQStale
	case nowMs >= r.ExpiresAtMs:
		return RFQExpired
	}
	return RFQTimely
}
