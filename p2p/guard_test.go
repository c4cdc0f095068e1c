package p2p

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func testPeer(i int) peer.ID             { return peer.ID(fmt.Sprintf("peer-%04d", i)) }
func near(a, b float64) bool             { return math.Abs(a-b) < 1e-6 }
func guardAt(c *fakeClock, cfg GuardConfig, deps GuardDeps) *Guard {
	deps.Now = c.now
	return NewGuard(cfg, deps)
}

func TestDecayedHalvesPerHalfLife(t *testing.T) {
	at := time.Unix(0, 0)
	for _, tc := range []struct {
		name string
		dt   time.Duration
		want float64
	}{
		{"now", 0, 80},
		{"one half-life", time.Minute, 40},
		{"two half-lives", 2 * time.Minute, 20},
		{"clock went back", -time.Minute, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decayed(80, at, at.Add(tc.dt), time.Minute); !near(got, tc.want) {
				t.Fatalf("decayed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGuardChargesDecayAndFeedTheScore(t *testing.T) {
	c := newFakeClock()
	g := guardAt(c, GuardConfig{HalfLife: time.Minute, ScorePerPoint: -50, BanPoints: 1000}, GuardDeps{})
	p := testPeer(1)
	g.Charge(p, AbuseGossipIgnore, 0) // default penalty 1
	g.Charge(p, AbuseGossipReject, 0) // default penalty 10
	if got := g.Points(p); !near(got, 11) {
		t.Fatalf("points = %v, want 11", got)
	}
	if got := g.AppScore(p); !near(got, -550) {
		t.Fatalf("app score = %v, want -550", got)
	}
	c.add(time.Minute)
	if got := g.Points(p); !near(got, 5.5) {
		t.Fatalf("points after a half-life = %v, want 5.5", got)
	}
	if got := g.Charge(p, AbuseStreamIdle, 4.5); !near(got, 10) {
		t.Fatalf("points after charge = %v, want 10", got)
	}
	if g.Points(testPeer(2)) != 0 || g.AppScore(testPeer(2)) != 0 {
		t.Fatal("an uncharged peer must score 0")
	}
	recs := g.Records(1)
	if len(recs) != 1 || recs[p].LastReason != AbuseStreamIdle {
		t.Fatalf("records = %+v", recs)
	}
}

func TestGuardBansAtThresholdButNotExemptPeers(t *testing.T) {
	c := newFakeClock()
	type ban struct {
		p      peer.ID
		until  time.Time
		reason AbuseReason
	}
	var bans []ban
	exempt := testPeer(9)
	g := guardAt(c, GuardConfig{BanPoints: 100, BanFor: time.Hour}, GuardDeps{
		Exempt: func(p peer.ID) bool { return p == exempt },
		Ban:    func(p peer.ID, until time.Time, r AbuseReason) { bans = append(bans, ban{p, until, r}) },
	})
	p := testPeer(1)
	for range 9 {
		g.Charge(p, AbuseDHTRecord, 10)
	}
	if len(bans) != 0 {
		t.Fatalf("banned at 90 points: %+v", bans)
	}
	g.Charge(p, AbuseDHTRecord, 10)
	if len(bans) != 1 || bans[0].p != p || !bans[0].until.Equal(c.t.Add(time.Hour)) || bans[0].reason != AbuseDHTRecord {
		t.Fatalf("bans = %+v", bans)
	}
	if g.Points(p) != 0 {
		t.Fatal("a banned peer's record is cleared")
	}
	for range 20 {
		g.Charge(exempt, AbuseGossipReject, 10)
	}
	if len(bans) != 1 {
		t.Fatal("an exempt peer was banned")
	}
	if g.AppScore(exempt) >= 0 {
		t.Fatal("an exempt peer is still charged")
	}
}

func TestGuardStateIsBounded(t *testing.T) {
	c := newFakeClock()
	g := guardAt(c, GuardConfig{MaxTracked: 64, BanPoints: 1e9}, GuardDeps{})
	heavy := testPeer(0)
	g.Charge(heavy, AbuseGossipReject, 500)
	for i := 1; i <= 1000; i++ {
		g.Allow(testPeer(i))
		if i%3 == 0 {
			g.Charge(testPeer(i), AbuseGossipIgnore, 0)
		}
		if g.Tracked() > 64 {
			t.Fatalf("tracking %d peers, bound 64", g.Tracked())
		}
	}
	if g.Points(heavy) < 400 {
		t.Fatal("the most charged peer was evicted before lightly charged ones")
	}
}

func TestGuardRateLimitsValidationPerPeer(t *testing.T) {
	c := newFakeClock()
	g := guardAt(c, GuardConfig{GossipRate: 10, GossipBurst: 5, BanPoints: 1e9}, GuardDeps{})
	a, b := testPeer(1), testPeer(2)
	allowed := 0
	for range 20 {
		if g.AllowGossip(a) {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("allowed %d of a burst, want 5", allowed)
	}
	if !near(g.Points(a), 15) {
		t.Fatalf("excess charged %v points, want 15", g.Points(a))
	}
	if !g.AllowGossip(b) {
		t.Fatal("another peer's budget is separate")
	}
	c.add(time.Second)
	allowed = 0
	for range 20 {
		if g.Allow(a) {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("after 1 s at 10/s with burst 5: allowed %d, want 5", allowed)
	}
}

func TestBlocklistBansExpireBlocksDoNot(t *testing.T) {
	c := newFakeClock()
	b := NewBlocklist()
	b.now = c.now
	banned, blocked := testPeer(1), testPeer(2)
	if !b.Ban(banned, c.t.Add(time.Hour)) || b.Ban(banned, c.t.Add(time.Minute)) {
		t.Fatal("Ban reports whether the peer was not banned before")
	}
	if until, _, _ := b.BannedUntil(banned); !until.Equal(c.t.Add(time.Hour)) {
		t.Fatalf("a shorter ban shortened the longer one: until %v", until)
	}
	b.Add(blocked)
	if b.Ban(blocked, c.t.Add(time.Minute)) {
		t.Fatal("a ban must not replace a block")
	}
	if !b.Has(banned) || !b.Has(blocked) || b.Count() != 2 {
		t.Fatal("both must be refused")
	}
	c.add(2 * time.Hour)
	if b.Has(banned) || !b.Has(blocked) || b.Count() != 1 {
		t.Fatal("the ban must expire and the block stay")
	}
	if !b.Ban(banned, c.t.Add(time.Hour)) {
		t.Fatal("a peer whose ban expired may be banned again")
	}
	if (gossipBlacklist{b}).Contains(banned) != true {
		t.Fatal("gossipsub's blacklist reads the blocklist")
	}
}
