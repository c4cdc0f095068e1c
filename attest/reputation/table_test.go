package reputation

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// leases returns n own outcomes of one GPU-hour each, ended age ago.
func leases(n int, state State, age time.Duration) []Outcome {
	out := make([]Outcome, n)
	for i := range out {
		out[i] = Outcome{Lease: fmt.Sprintf("%s-%v-%d", state, age, i), Provider: "p", EndedAt: t0.Add(-age), State: state, GPUHours: 1}
	}
	return out
}

// big returns n own successes of 24 GPU-hours each, ended age ago.
func big(n int, age time.Duration) []Outcome {
	out := leases(n, StateCompleted, age)
	for i := range out {
		out[i].GPUHours = 24
	}
	return out
}

// receipts returns n gossiped one-GPU-hour receipts from renters named by
// renter(i), made now.
func receipts(n int, state State, renter func(i int) string) []Receipt {
	out := make([]Receipt, n)
	for i := range out {
		out[i] = Receipt{Lease: fmt.Sprintf("g-%s-%d", state, i), Provider: "p", Renter: renter(i), At: t0, State: state, GPUHours: 1}
	}
	return out
}

func cat[T any](xs ...[]T) []T {
	var out []T
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

// TestDefaults documents what the default Config makes of typical
// evidence. Unless said otherwise leases are one GPU-hour (one
// observation) and end now.
func TestDefaults(t *testing.T) {
	cases := []struct {
		name  string
		ev    Evidence
		score float64
		badge Badge
	}{
		{"no evidence: the prior", Evidence{}, 0.8, BadgeNone},
		{"1 success", Evidence{Outcomes: leases(1, StateCompleted, 0)}, 5.0 / 6, BadgeBronze},
		{"1 failure", Evidence{Outcomes: leases(1, StateFailed, 0)}, 4.0 / 6, BadgeNone},
		{"3 failures", Evidence{Outcomes: leases(3, StateUnreachable, 0)}, 0.5, BadgeNone},
		{"10 successes", Evidence{Outcomes: leases(10, StateCompleted, 0)}, 14.0 / 15, BadgeSilver},
		{"10 successes, 1 failure", Evidence{Outcomes: cat(leases(10, StateCompleted, 0), leases(1, StateFailed, 0))}, 14.0 / 16, BadgeSilver},
		{"flaky: 7 successes, 3 failures", Evidence{Outcomes: cat(leases(7, StateCompleted, 0), leases(3, StateExpired, 0))}, 11.0 / 15, BadgeBronze},
		{"10 successes, preempted and cancelled are neutral", Evidence{Outcomes: cat(leases(10, StateCompleted, 0),
			leases(1, StatePreempted, 0), leases(1, StateCancelledByRenter, 0))}, 14.0 / 15, BadgeSilver},
		{"50 successes: gold", Evidence{Outcomes: leases(50, StateCompleted, 0)}, 54.0 / 55, BadgeGold},
		{"100 successes", Evidence{Outcomes: leases(100, StateCompleted, 0)}, 104.0 / 105, BadgeGold},
		{"10 successes 7 days ago (one half-life)", Evidence{Outcomes: leases(10, StateCompleted, 7*day)}, 9.0 / 10, BadgeBronze},
		{"10 successes 14 days ago", Evidence{Outcomes: leases(10, StateCompleted, 14*day)}, 6.5 / 7.5, BadgeBronze},
		{"10 successes 70 days ago: back near the prior", Evidence{Outcomes: leases(10, StateCompleted, 70*day)},
			(4 + 10*math.Exp2(-10)) / (5 + 10*math.Exp2(-10)), BadgeNone},
		{"one 24 GPU-hour success", Evidence{Outcomes: []Outcome{{Lease: "l", Provider: "p", EndedAt: t0, State: StateCompleted, GPUHours: 24}}},
			(4 + math.Log2(25)) / (5 + math.Log2(25)), BadgeSilver},
		{"one 1 GPU-minute success", Evidence{Outcomes: []Outcome{{Lease: "l", Provider: "p", EndedAt: t0, State: StateCompleted, GPUHours: 1.0 / 60}}},
			(4 + math.Log2(1+1.0/60)) / (5 + math.Log2(1+1.0/60)), BadgeNone},
		{"one 24 GPU-hour failure", Evidence{Outcomes: []Outcome{{Lease: "l", Provider: "p", EndedAt: t0, State: StateFailed, GPUHours: 24}}},
			4 / (5 + math.Log2(25)), BadgeNone},
		{"10 gossiped successes, 10 renters", Evidence{Receipts: receipts(10, StateCompleted, func(i int) string { return fmt.Sprint("r", i) })},
			7.0 / 8, BadgeBronze},
		{"10 gossiped successes, 1 renter (diminishing)", Evidence{Receipts: receipts(10, StateCompleted, func(int) string { return "r" })},
			(4 + 0.3*(2-math.Exp2(-9))) / (5 + 0.3*(2-math.Exp2(-9))), BadgeNone},
		{"7 days of full uptime", Evidence{Uptime: []Uptime{{Provider: "p", From: t0.Add(-7 * day), To: t0, Seen: 100, Expected: 100}}},
			(4 + 0.2*7/math.Ln2/2) / (5 + 0.2*7/math.Ln2/2), BadgeNone},
		{"7 days of half uptime", Evidence{Uptime: []Uptime{{Provider: "p", From: t0.Add(-7 * day), To: t0, Seen: 50, Expected: 100}}},
			(4 + 0.2*7/math.Ln2/4) / (5 + 0.2*7/math.Ln2/2), BadgeNone},
		{"four 24 GPU-hour successes: gold", Evidence{Outcomes: big(4, 0)}, (4 + 4*math.Log2(25)) / (5 + 4*math.Log2(25)), BadgeGold},
		{"one 1000 GPU-hour success: not gold", Evidence{Outcomes: []Outcome{{Lease: "l", Provider: "p", EndedAt: t0, State: StateCompleted, GPUHours: 1000}}},
			(4 + math.Log2(1001)) / (5 + math.Log2(1001)), BadgeSilver},
		{"one 10^6 GPU-hour success counts as 1000", Evidence{Outcomes: []Outcome{{Lease: "l", Provider: "p", EndedAt: t0, State: StateCompleted, GPUHours: 1e6}}},
			(4 + math.Log2(1001)) / (5 + math.Log2(1001)), BadgeSilver},
		{"ten 24 GPU-hour successes, one failure: silver", Evidence{Outcomes: cat(big(10, 0), []Outcome{{Lease: "f", Provider: "p", EndedAt: t0, State: StateFailed, GPUHours: 24}})},
			(4 + 10*math.Log2(25)) / (5 + 11*math.Log2(25)), BadgeSilver},
		{"fraud: 0 whatever else", Evidence{Outcomes: leases(100, StateCompleted, 0), Frauds: []Fraud{{Provider: "p", At: t0.Add(-365 * day)}}},
			0, BadgeRevoked},
	}
	cfg := DefaultConfig()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Score("p", c.ev, t0, cfg)
			t.Logf("score %.4f badge %s volume %.2f GPU-h S %.3f F %.3f", r.Score, r.Badge, r.EffectiveGPUHours, r.SuccessWeight, r.FailureWeight)
			if math.Abs(r.Score-c.score) > 1e-12 {
				t.Errorf("score %.6f, want %.6f", r.Score, c.score)
			}
			if r.Badge != c.badge {
				t.Errorf("badge %s, want %s", r.Badge, c.badge)
			}
		})
	}
}

func TestCountsAndIgnored(t *testing.T) {
	ev := Evidence{
		Outcomes: []Outcome{
			{Lease: "a", Provider: "p", EndedAt: t0, State: StateCompleted, GPUHours: 1},
			{Lease: "a", Provider: "p", EndedAt: t0, State: StateCompleted, GPUHours: 1}, // duplicate
			{Lease: "b", Provider: "p", EndedAt: t0, State: StateFailed, GPUHours: 1},
			{Lease: "c", Provider: "p", EndedAt: t0, State: StateCancelledByRenter, GPUHours: 1},
			{Lease: "z", Provider: "q", EndedAt: t0, State: StateFailed, GPUHours: 1}, // another provider
		},
		Receipts: []Receipt{
			{Lease: "a", Provider: "p", Renter: "r1", At: t0, State: StateFailed, GPUHours: 1},      // own outcome wins
			{Lease: "d", Provider: "p", Renter: "p", At: t0, State: StateCompleted, GPUHours: 1},    // self-report
			{Lease: "e", Provider: "p", Renter: "r1", At: t0, State: StateCompleted, GPUHours: 1},   // counts
			{Lease: "e", Provider: "p", Renter: "r2", At: t0, State: StateCompleted, GPUHours: 1},   // second receipt for e
			{Lease: "f", Provider: "p", Renter: "r2", At: t0, State: StateUnreachable, GPUHours: 2}, // counts
		},
		Uptime: []Uptime{
			{Provider: "p", From: t0.Add(-time.Hour), To: t0, Seen: 60, Expected: 60},
			{Provider: "p", From: t0.Add(-time.Hour), To: t0, Seen: 60, Expected: 60}, // duplicate
			{Provider: "p", From: t0, To: t0.Add(-time.Hour), Seen: 1, Expected: 1},   // backwards
			{Provider: "p", From: t0.Add(-time.Hour), To: t0.Add(time.Minute), Seen: 0, Expected: 0},
		},
	}
	r := Score("p", ev, t0, DefaultConfig())
	if r.OwnSuccesses != 1 || r.OwnFailures != 1 || r.OwnNeutral != 1 {
		t.Errorf("own %d/%d/%d, want 1/1/1", r.OwnSuccesses, r.OwnFailures, r.OwnNeutral)
	}
	if r.GossipSuccesses != 1 || r.GossipFailures != 1 || r.GossipIgnored != 3 {
		t.Errorf("gossip %d/%d ignored %d, want 1/1 ignored 3", r.GossipSuccesses, r.GossipFailures, r.GossipIgnored)
	}
	if r.UptimeWindows != 1 || r.UptimeRatio != 1 {
		t.Errorf("uptime %d windows ratio %v, want 1 window ratio 1", r.UptimeWindows, r.UptimeRatio)
	}
	if want := 1 + 0.3; math.Abs(r.EffectiveGPUHours-want) > 1e-12 {
		t.Errorf("volume %v, want %v", r.EffectiveGPUHours, want)
	}
}

func TestFraudAmnesty(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FraudAmnesty = 30 * day
	ev := Evidence{
		Outcomes: cat(leases(10, StateCompleted, 60*day), leases(2, StateCompleted, 0)),
		Frauds:   []Fraud{{Provider: "p", At: t0.Add(-40 * day)}, {Provider: "p", At: t0.Add(-50 * day)}},
		Uptime:   []Uptime{{Provider: "p", From: t0.Add(-50 * day), To: t0, Seen: 1, Expected: 1}},
	}
	r := Score("p", ev, t0, cfg)
	if r.Fraud || r.Badge == BadgeRevoked {
		t.Fatalf("fraud 40 days ago with 30 days' amnesty still in force: %+v", r)
	}
	// Only evidence after the latest proof counts: the two recent leases
	// and uptime from day -40 on.
	if r.OwnSuccesses != 2 {
		t.Errorf("own successes %d, want 2 (older ones predate the fraud)", r.OwnSuccesses)
	}
	clipped := Score("p", Evidence{Outcomes: leases(2, StateCompleted, 0),
		Uptime: []Uptime{{Provider: "p", From: t0.Add(-40 * day), To: t0, Seen: 1, Expected: 1}}}, t0, cfg)
	if r.Score != clipped.Score {
		t.Errorf("score %v, want %v (as if the evidence started at the fraud)", r.Score, clipped.Score)
	}

	r = Score("p", ev, t0.Add(-15*day), cfg)
	if !r.Fraud || r.Score != 0 {
		t.Errorf("fraud 25 days ago with 30 days' amnesty: %+v, want in force", r)
	}
}

func TestBadgeAllows(t *testing.T) {
	cases := []struct {
		badge                Badge
		gold, silver, bronze bool
	}{
		{BadgeRevoked, false, false, false},
		{BadgeNone, false, true, true},
		{BadgeBronze, false, true, true},
		{BadgeSilver, false, true, true},
		{BadgeGold, true, true, true},
	}
	for _, c := range cases {
		t.Run(c.badge.String(), func(t *testing.T) {
			if got := c.badge.Allows("gold"); got != c.gold {
				t.Errorf("gold: %v", got)
			}
			if got := c.badge.Allows("silver"); got != c.silver {
				t.Errorf("silver: %v", got)
			}
			if got := c.badge.Allows("bronze"); got != c.bronze {
				t.Errorf("bronze: %v", got)
			}
			if c.badge.Allows("platinum") || c.badge.Allows("") {
				t.Error("an unknown tier is allowed")
			}
		})
	}
	// A new provider can win bronze work.
	if r := Score("new", Evidence{}, t0, DefaultConfig()); !r.Badge.Allows("bronze") || r.Score != 0.8 {
		t.Errorf("new provider: %+v", r)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Config){
		"prior above 1":           func(c *Config) { c.Prior = 1.1 },
		"prior NaN":               func(c *Config) { c.Prior = math.NaN() },
		"zero prior strength":     func(c *Config) { c.PriorStrength = 0 },
		"negative own weight":     func(c *Config) { c.OwnWeight = -1 },
		"infinite gossip weight":  func(c *Config) { c.GossipWeight = math.Inf(1) },
		"negative uptime weight":  func(c *Config) { c.UptimeWeight = -0.1 },
		"diminish 1":              func(c *Config) { c.GossipDiminish = 1 },
		"zero uptime unit":        func(c *Config) { c.UptimeUnit = 0 },
		"zero half-life":          func(c *Config) { c.HalfLife = 0 },
		"zero max GPU-hours":      func(c *Config) { c.MaxLeaseGPUHours = 0 },
		"negative amnesty":        func(c *Config) { c.FraudAmnesty = -time.Second },
		"unknown state":           func(c *Config) { c.Effects[State(99)] = EffectSuccess },
		"unknown effect":          func(c *Config) { c.Effects[StateFailed] = Effect(9) },
		"gold easier than silver": func(c *Config) { c.Gold.GPUHours = 5 },
		"bronze score above 1":    func(c *Config) { c.Bronze.Score = 2 },
	}
	for name, mut := range bad {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			mut(&c)
			if err := c.Validate(); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestScoresAndStrings(t *testing.T) {
	m := Scores(Fold(Evidence{Outcomes: leases(1, StateFailed, 0)}, t0, DefaultConfig()))
	if len(m) != 1 || math.Abs(m["p"]-4.0/6) > 1e-12 {
		t.Errorf("Scores: %v", m)
	}
	for _, s := range States {
		if s.String() == "unknown" {
			t.Errorf("state %d has no name", s)
		}
	}
	if State(0).String() != "unknown" || Effect(7).String() != "unknown" || Badge(9).String() != "unknown" {
		t.Error("unknown values named")
	}
}
