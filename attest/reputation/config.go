package reputation

import (
	"fmt"
	"math"
	"time"
)

// Config tunes the fold. [DefaultConfig] documents the defaults; every
// field must be set (a zero Config is not valid, see [Config.Validate]).
type Config struct {
	// Prior is the score of a provider without evidence, 0..1: the node's
	// market.reliability_prior.
	Prior float64
	// PriorStrength is how many observations the prior is worth (> 0): the
	// larger, the more evidence it takes to move a score away from Prior.
	PriorStrength float64

	// OwnWeight, GossipWeight and UptimeWeight weigh the three sources
	// (>= 0). Own outcomes are first-hand; gossiped receipts are second-hand
	// and easier to manufacture; uptime says a provider is reachable, not
	// that it delivers.
	OwnWeight    float64
	GossipWeight float64
	UptimeWeight float64
	// GossipDiminish, in 0..1: one renter's k-th heaviest receipt about a
	// provider counts GossipDiminish^k times as much, so one renter
	// identity adds at most 1/(1-GossipDiminish) times its heaviest receipt.
	GossipDiminish float64
	// UptimeUnit is how much watched time counts as one uptime observation
	// (before UptimeWeight and decay).
	UptimeUnit time.Duration

	// HalfLife is the age at which evidence weighs half (> 0).
	HalfLife time.Duration
	// MaxLeaseGPUHours caps the GPU-hours one lease is counted with, in the
	// score and in the badge volume (> 0), so that one absurd receipt cannot
	// dominate.
	MaxLeaseGPUHours float64

	// Effects says what each lease state counts as; states missing from
	// the map are neutral.
	Effects map[State]Effect

	// FraudAmnesty is how long a fraud proof zeroes the score; 0 means for
	// ever.
	FraudAmnesty time.Duration

	// Bronze, Silver and Gold are what each badge takes; each must ask at
	// least as much as the one below it.
	Bronze, Silver, Gold Threshold
}

// Threshold is what a badge level takes: a score and a volume of decayed
// GPU-hours of successful leases, both at least these.
type Threshold struct {
	Score    float64
	GPUHours float64
}

// DefaultConfig returns the defaults:
//
//   - Prior 0.8 worth 5 observations (five one-GPU-hour leases);
//   - weights: own outcomes 1, gossiped receipts 0.3 diminishing by half
//     per further receipt from the same renter, uptime 0.2 per day watched;
//   - half-life 7 days; one lease counts with at most 1000 GPU-hours;
//   - completed: success; failed, expired, provider-unreachable: failure;
//     preempted, cancelled by renter: neutral (see the package doc);
//   - fraud zeroes the score for ever;
//   - badges: bronze at score 0.7 and 1 GPU-hour, silver at 0.85 and 10,
//     gold at 0.95 and 50. Gold's score is high enough that no single
//     lease earns it (one 1000 GPU-hour success scores 0.933): it takes
//     repeated delivery, e.g. 50 one-GPU-hour leases (0.982) or four
//     24 GPU-hour ones (0.958); with one failed 24 GPU-hour lease it takes
//     23 successes of that size, until decay wears the failure down.
func DefaultConfig() Config {
	return Config{
		Prior:            0.8,
		PriorStrength:    5,
		OwnWeight:        1,
		GossipWeight:     0.3,
		UptimeWeight:     0.2,
		GossipDiminish:   0.5,
		UptimeUnit:       24 * time.Hour,
		HalfLife:         7 * 24 * time.Hour,
		MaxLeaseGPUHours: 1000,
		Effects: map[State]Effect{
			StateCompleted:         EffectSuccess,
			StateFailed:            EffectFailure,
			StateExpired:           EffectFailure,
			StateUnreachable:       EffectFailure,
			StatePreempted:         EffectNeutral,
			StateCancelledByRenter: EffectNeutral,
		},
		FraudAmnesty: 0,
		Bronze:       Threshold{Score: 0.7, GPUHours: 1},
		Silver:       Threshold{Score: 0.85, GPUHours: 10},
		Gold:         Threshold{Score: 0.95, GPUHours: 50},
	}
}

// Validate reports the first field out of range. [Score] and [Fold] expect
// a valid Config.
func (c Config) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(c.Prior >= 0 && c.Prior <= 1):
		return fmt.Errorf("reputation: prior %v: must be within 0..1", c.Prior)
	case !(c.PriorStrength > 0) || !finite(c.PriorStrength):
		return fmt.Errorf("reputation: prior strength %v: must be positive", c.PriorStrength)
	case !(c.OwnWeight >= 0) || !finite(c.OwnWeight):
		return fmt.Errorf("reputation: own weight %v: must be >= 0", c.OwnWeight)
	case !(c.GossipWeight >= 0) || !finite(c.GossipWeight):
		return fmt.Errorf("reputation: gossip weight %v: must be >= 0", c.GossipWeight)
	case !(c.UptimeWeight >= 0) || !finite(c.UptimeWeight):
		return fmt.Errorf("reputation: uptime weight %v: must be >= 0", c.UptimeWeight)
	case !(c.GossipDiminish >= 0 && c.GossipDiminish < 1):
		return fmt.Errorf("reputation: gossip diminish %v: must be within 0..1 (1 excluded)", c.GossipDiminish)
	case c.UptimeUnit <= 0:
		return fmt.Errorf("reputation: uptime unit %v: must be positive", c.UptimeUnit)
	case c.HalfLife <= 0:
		return fmt.Errorf("reputation: half-life %v: must be positive", c.HalfLife)
	case !(c.MaxLeaseGPUHours > 0) || !finite(c.MaxLeaseGPUHours):
		return fmt.Errorf("reputation: max lease GPU-hours %v: must be positive", c.MaxLeaseGPUHours)
	case c.FraudAmnesty < 0:
		return fmt.Errorf("reputation: fraud amnesty %v: must be >= 0 (0: never)", c.FraudAmnesty)
	}
	for s, e := range c.Effects {
		if s.String() == "unknown" || e.String() == "unknown" {
			return fmt.Errorf("reputation: effects: %d -> %d: unknown state or effect", s, e)
		}
	}
	levels := []struct {
		name string
		t    Threshold
	}{{"bronze", c.Bronze}, {"silver", c.Silver}, {"gold", c.Gold}}
	for i, l := range levels {
		if !(l.t.Score >= 0 && l.t.Score <= 1) || !(l.t.GPUHours >= 0) || !finite(l.t.GPUHours) {
			return fmt.Errorf("reputation: %s badge %+v: score must be within 0..1, GPU-hours >= 0", l.name, l.t)
		}
		if i > 0 && (l.t.Score < levels[i-1].t.Score || l.t.GPUHours < levels[i-1].t.GPUHours) {
			return fmt.Errorf("reputation: %s badge %+v asks less than %s %+v", l.name, l.t, levels[i-1].name, levels[i-1].t)
		}
	}
	return nil
}

// effect is what state s counts as.
func (c Config) effect(s State) Effect { return c.Effects[s] }
