package auction

import (
	"time"
)

// MaxWaitFor is how long the renter keeps auctioning a job that no
// auction found a plan for, as the spec's `max_wait` says; ok is false
// when the spec leaves it to the renter's market.max_wait. Like
// `replicas`, it is the renter's business: not in the canonical spec.
func (s *JobSpec) MaxWaitFor() (d time.Duration, ok bool) {
	if s.MaxWait == "" {
		return 0, false
	}
	d, err := time.ParseDuration(s.MaxWait)
	return d, err == nil
}

// resolveMaxWait checks `max_wait`: a duration from 0s (unfilled at the
// first auction) up to the longest job; it adds nothing to the canonical
// spec.
func (s *JobSpec) resolveMaxWait(sp *specProblems) {
	if s.MaxWait == "" {
		return
	}
	d, err := time.ParseDuration(s.MaxWait)
	switch {
	case err != nil:
		sp.add("max_wait", "%q is not a duration such as 0s, 30m or 2h", s.MaxWait)
	case d < 0:
		sp.add("max_wait", "%q must not be negative", s.MaxWait)
	case d > MaxJobDuration:
		sp.add("max_wait", "%q exceeds %s", s.MaxWait, MaxJobDuration)
	}
}
