package renter

import (
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// shardSilence remembers the shards whose expected bidders stayed silent
// (auction.ExpectedStayedSilent) and sent no bid, and those whose RFQ
// found no subscriber,
// so the renter's next RFQ there asks every provider to bid
// (auction.EveryoneBids) instead of waiting on the same silent prefix
// again, and publishes without waiting for a subscriber that was not
// there last time. An auction whose expected bidders answered clears its
// shards.
type shardSilence struct {
	mu      sync.Mutex
	silent  map[auction.Shard]time.Time // until when the shard asks everyone
	noSub   map[auction.Shard]time.Time // until when the shard gets no wait
	maxKept int
}

// silenceFor is how long a silent shard asks everyone and a shard without
// subscribers gets no wait: long enough to outlast a sybil flood's
// digests being dropped (a few auctions), short enough that the default
// want_bids comes back soon after.
const silenceFor = 5 * time.Minute

// maxSilentShards bounds the shards remembered (shards come from the
// market view, which sybils may fill with made-up families).
const maxSilentShards = 256

func newShardSilence() *shardSilence {
	return &shardSilence{silent: map[auction.Shard]time.Time{}, noSub: map[auction.Shard]time.Time{}, maxKept: maxSilentShards}
}

// everyone reports whether an RFQ on shards should ask every provider.
func (s *shardSilence) everyone(shards []auction.Shard, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sh := range shards {
		if until, ok := s.silent[sh]; ok && now.Before(until) {
			return true
		}
	}
	return false
}

// settle records how an auction on shards went: bids in all, and how
// many of the providers expected answered. An auction that got no bid
// while its expected bidders stayed silent marks its shards (asking
// everyone costs every feasible provider a bid, so not while some bid);
// one whose expected bidders answered clears them. An auction that asked
// everyone and got bids only from providers outside the silent ones
// leaves the mark: the silent ones are still expected.
func (s *shardSilence) settle(shards []auction.Shard, bids, expected, answered int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	silent := auction.ExpectedStayedSilent(expected, answered)
	for _, sh := range shards {
		switch {
		case silent && bids == 0:
			s.markLocked(s.silent, sh, now)
		case !silent && expected > 0:
			delete(s.silent, sh)
		}
	}
}

// waitForSubscriber reports whether publishing on sh should wait for a
// subscriber: not when it had none the last time.
func (s *shardSilence) waitForSubscriber(sh auction.Shard, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.noSub[sh]
	return !ok || !now.Before(until)
}

// subscribers records whether a publish on sh found a subscriber.
func (s *shardSilence) subscribers(sh auction.Shard, found bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if found {
		delete(s.noSub, sh)
		return
	}
	s.markLocked(s.noSub, sh, now)
}

func (s *shardSilence) markLocked(m map[auction.Shard]time.Time, sh auction.Shard, now time.Time) {
	if _, ok := m[sh]; !ok && len(m) >= s.maxKept {
		for k, until := range m {
			if !now.Before(until) || len(m) >= s.maxKept {
				delete(m, k)
			}
		}
	}
	m[sh] = now.Add(silenceFor)
}
