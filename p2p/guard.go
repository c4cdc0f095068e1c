package p2p

import (
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"
)

// AbuseReason names one kind of abuse a peer is charged for.
type AbuseReason string

// The reasons the p2p layer charges by itself; the node may charge others.
const (
	// AbuseGossipIgnore: a message the validator ignored (stale, dated
	// ahead, a replay): the peer made us work for nothing.
	AbuseGossipIgnore AbuseReason = "gossip_ignore"
	// AbuseGossipReject: a message the validator rejected (malformed,
	// forged, bad signature).
	AbuseGossipReject AbuseReason = "gossip_reject"
	// AbuseGossipRate: a message over the peer's validation rate, dropped
	// before any signature check.
	AbuseGossipRate AbuseReason = "gossip_rate"
	// AbuseGossipGraylisted: a message pushed while graylisted.
	AbuseGossipGraylisted AbuseReason = "gossip_graylisted"
	// AbuseDHTRecord: a DHT PUT whose record failed validation.
	AbuseDHTRecord AbuseReason = "dht_invalid_record"
	// AbuseDHTRate: DHT PUTs over the peer's rate.
	AbuseDHTRate AbuseReason = "dht_rate"
	// AbuseStreamCap: a stream over the per-peer concurrency cap.
	AbuseStreamCap AbuseReason = "stream_cap"
	// AbuseStreamIdle: a stream that sent no complete request in time
	// (idle or slowloris).
	AbuseStreamIdle AbuseReason = "stream_idle"
	// AbuseStreamMalformed: a stream whose request was oversized or not
	// framed.
	AbuseStreamMalformed AbuseReason = "stream_malformed"
)

// GuardConfig tunes the abuse guard. Zero fields take the defaults of
// DefaultGuardConfig.
type GuardConfig struct {
	// HalfLife is how fast abuse points are forgiven: they halve this often.
	HalfLife time.Duration
	// ScorePerPoint converts points into gossipsub's application score
	// (negative). With the thresholds in gossip.go (-500 gossip, -2500
	// graylist) and the default -50, 10 points stop gossip to the peer
	// and 50 points graylist it.
	ScorePerPoint float64
	// BanPoints: a peer that reaches this many points is banned for BanFor.
	BanPoints float64
	BanFor    time.Duration
	// Penalties are the points each reason costs when Charge is given no
	// amount; missing reasons cost 1.
	Penalties map[AbuseReason]float64
	// GossipRate and GossipBurst bound the gossip messages per second each
	// peer may make us validate; excess is dropped before any signature
	// check and charged as AbuseGossipRate.
	GossipRate  float64
	GossipBurst int
	// DHTPutRate and DHTPutBurst bound each peer's DHT record PUTs.
	DHTPutRate  float64
	DHTPutBurst int
	// MaxTracked bounds the peers with state; the least charged go first.
	MaxTracked int
	// WarnEvery is how often at most one peer is named in a WARN line.
	WarnEvery time.Duration
	// WarnPoints is the total a peer must reach to be named in a WARN
	// line: an honest relay earns a point now and then (an RFQ late by
	// a hair), which is not news for an operator.
	WarnPoints float64
}

// DefaultGuardConfig returns the production defaults.
func DefaultGuardConfig() GuardConfig {
	return GuardConfig{
		HalfLife:      2 * time.Minute,
		ScorePerPoint: -50,
		BanPoints:     200,
		BanFor:        6 * time.Hour,
		Penalties: map[AbuseReason]float64{
			AbuseGossipIgnore:     1,
			AbuseGossipReject:     10,
			AbuseGossipRate:       1,
			AbuseGossipGraylisted: 1,
			AbuseDHTRecord:        25,
			AbuseDHTRate:          2,
			AbuseStreamCap:        0.5,
			AbuseStreamIdle:       5,
			AbuseStreamMalformed:  10,
		},
		GossipRate:  200,
		GossipBurst: 400,
		DHTPutRate:  2,
		DHTPutBurst: 20,
		MaxTracked:  4096,
		WarnEvery:   time.Minute,
		WarnPoints:  5,
	}
}

func (c GuardConfig) withDefaults() GuardConfig {
	d := DefaultGuardConfig()
	if c.HalfLife <= 0 {
		c.HalfLife = d.HalfLife
	}
	if c.ScorePerPoint == 0 {
		c.ScorePerPoint = d.ScorePerPoint
	}
	if c.BanPoints <= 0 {
		c.BanPoints = d.BanPoints
	}
	if c.BanFor <= 0 {
		c.BanFor = d.BanFor
	}
	if c.Penalties == nil {
		c.Penalties = d.Penalties
	}
	if c.GossipRate <= 0 {
		c.GossipRate, c.GossipBurst = d.GossipRate, d.GossipBurst
	}
	if c.GossipBurst <= 0 {
		c.GossipBurst = int(math.Ceil(c.GossipRate))
	}
	if c.DHTPutRate <= 0 {
		c.DHTPutRate, c.DHTPutBurst = d.DHTPutRate, d.DHTPutBurst
	}
	if c.DHTPutBurst <= 0 {
		c.DHTPutBurst = int(math.Ceil(c.DHTPutRate))
	}
	if c.MaxTracked <= 0 {
		c.MaxTracked = d.MaxTracked
	}
	if c.WarnEvery <= 0 {
		c.WarnEvery = d.WarnEvery
	}
	return c
}

// decayed is what points charged at `at` are worth at now: they halve
// every halfLife.
func decayed(points float64, at, now time.Time, halfLife time.Duration) float64 {
	dt := now.Sub(at)
	if dt <= 0 || points == 0 {
		return points
	}
	return points * math.Exp2(-dt.Seconds()/halfLife.Seconds())
}

// Guard keeps each peer's abuse points and rate limiters. Points decay,
// lower the peer's gossipsub score (so gossipsub stops gossiping to it and
// then graylists it) and, at BanPoints, ban it. It is safe for concurrent
// use; the node reaches it through Node.Guard.
type Guard struct {
	cfg GuardConfig
	now func() time.Time
	log *slog.Logger
	// exempt peers (ourselves, bootstrap peers) are charged but never
	// banned.
	exempt func(peer.ID) bool
	// ban carries out a ban: blocklist, persistence, closing connections.
	ban func(p peer.ID, until time.Time, reason AbuseReason)
	// charged feeds the metrics; may be nil.
	charged func(reason AbuseReason, points float64)

	warn *rate.Limiter

	mu    sync.Mutex
	peers map[peer.ID]*peerAbuse
}

// peerAbuse is one peer's record.
type peerAbuse struct {
	points float64
	at     time.Time // when points were last brought up to date
	last   AbuseReason
	gossip *rate.Limiter
	dhtPut *rate.Limiter
	warned time.Time
}

// GuardDeps are the guard's collaborators; every field may be nil.
type GuardDeps struct {
	Now     func() time.Time
	Logger  *slog.Logger
	Exempt  func(peer.ID) bool
	Ban     func(p peer.ID, until time.Time, reason AbuseReason)
	Charged func(reason AbuseReason, points float64)
}

// NewGuard builds a guard. Node builds its own; this is for tests and
// tools.
func NewGuard(cfg GuardConfig, deps GuardDeps) *Guard {
	g := &Guard{
		cfg:     cfg.withDefaults(),
		now:     deps.Now,
		log:     deps.Logger,
		exempt:  deps.Exempt,
		ban:     deps.Ban,
		charged: deps.Charged,
		peers:   map[peer.ID]*peerAbuse{},
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.warn = rate.NewLimiter(rate.Every(g.cfg.WarnEvery/10), 10)
	return g
}

// Penalty is the default cost of reason.
func (g *Guard) Penalty(reason AbuseReason) float64 {
	if p, ok := g.cfg.Penalties[reason]; ok {
		return p
	}
	return 1
}

// entryLocked returns p's record, creating it (and making room) if needed.
func (g *Guard) entryLocked(p peer.ID, now time.Time) *peerAbuse {
	e, ok := g.peers[p]
	if ok {
		return e
	}
	if len(g.peers) >= g.cfg.MaxTracked {
		g.evictLocked(now)
	}
	e = &peerAbuse{at: now}
	g.peers[p] = e
	return e
}

// evictLocked makes room: it forgets every peer whose points have decayed
// below one, or else the least charged peer.
func (g *Guard) evictLocked(now time.Time) {
	var least peer.ID
	leastPts := math.Inf(1)
	for p, e := range g.peers {
		pts := decayed(e.points, e.at, now, g.cfg.HalfLife)
		if pts < 1 {
			delete(g.peers, p)
			continue
		}
		if pts < leastPts {
			least, leastPts = p, pts
		}
	}
	if len(g.peers) >= g.cfg.MaxTracked && least != "" {
		delete(g.peers, least)
	}
}

// Charge adds points against p for reason; points <= 0 charges the
// reason's Penalty. A peer that reaches BanPoints is banned (unless
// exempt) and its record cleared. It returns p's points after the charge.
func (g *Guard) Charge(p peer.ID, reason AbuseReason, points float64) float64 {
	if p == "" {
		return 0
	}
	if points <= 0 {
		points = g.Penalty(reason)
	}
	now := g.now()
	g.mu.Lock()
	e := g.entryLocked(p, now)
	e.points = decayed(e.points, e.at, now, g.cfg.HalfLife) + points
	e.at = now
	e.last = reason
	total := e.points
	warn := total >= g.cfg.WarnPoints && now.Sub(e.warned) >= g.cfg.WarnEvery && g.warn.AllowN(now, 1)
	if warn {
		e.warned = now
	}
	banned := total >= g.cfg.BanPoints && (g.exempt == nil || !g.exempt(p))
	if banned {
		delete(g.peers, p)
	}
	g.mu.Unlock()

	if g.charged != nil {
		g.charged(reason, points)
	}
	if warn && !banned {
		g.log.Warn("peer abuse", "peer", p, "reason", string(reason), "points", math.Round(total*10)/10)
	}
	if banned {
		until := now.Add(g.cfg.BanFor)
		g.log.Warn("peer banned for abuse", "peer", p, "reason", string(reason), "points", math.Round(total*10)/10, "until", until.Format(time.RFC3339))
		if g.ban != nil {
			g.ban(p, until, reason)
		}
	}
	return total
}

// Points is p's current (decayed) abuse points. Gossipsub asks for them
// of every peer it scores, many times a second, and almost every peer has
// none: those cost a map lookup, not the clock.
func (g *Guard) Points(p peer.ID) float64 {
	g.mu.Lock()
	e, ok := g.peers[p]
	var points float64
	var at time.Time
	if ok {
		points, at = e.points, e.at
	}
	g.mu.Unlock()
	if points == 0 {
		return 0
	}
	return decayed(points, at, g.now(), g.cfg.HalfLife)
}

// AppScore is p's contribution to gossipsub's application-specific score:
// ScorePerPoint for every point. It is cheap: gossipsub calls it on every
// RPC it weighs.
func (g *Guard) AppScore(p peer.ID) float64 { return g.cfg.ScorePerPoint * g.Points(p) }

// Allow takes one token from p's gossip validation budget. A false answer
// means: drop the message unvalidated. It does not charge; AllowGossip
// does.
func (g *Guard) Allow(p peer.ID) bool {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entryLocked(p, now)
	if e.gossip == nil {
		e.gossip = rate.NewLimiter(rate.Limit(g.cfg.GossipRate), g.cfg.GossipBurst)
	}
	return e.gossip.AllowN(now, 1)
}

// AllowGossip is Allow that charges AbuseGossipRate on refusal.
func (g *Guard) AllowGossip(p peer.ID) bool {
	if g.Allow(p) {
		return true
	}
	g.Charge(p, AbuseGossipRate, 0)
	return false
}

// AllowDHTPut takes one token from p's DHT PUT budget, charging
// AbuseDHTRate on refusal.
func (g *Guard) AllowDHTPut(p peer.ID) bool {
	now := g.now()
	g.mu.Lock()
	e := g.entryLocked(p, now)
	if e.dhtPut == nil {
		e.dhtPut = rate.NewLimiter(rate.Limit(g.cfg.DHTPutRate), g.cfg.DHTPutBurst)
	}
	ok := e.dhtPut.AllowN(now, 1)
	g.mu.Unlock()
	if !ok {
		g.Charge(p, AbuseDHTRate, 0)
	}
	return ok
}

// Tracked is the number of peers with guard state (bounded by MaxTracked).
func (g *Guard) Tracked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.peers)
}

// AbuseRecord is what the guard knows of one peer.
type AbuseRecord struct {
	Points float64
	// LastReason is the reason of the latest charge.
	LastReason AbuseReason
}

// Records returns the peers with at least minPoints (decayed).
func (g *Guard) Records(minPoints float64) map[peer.ID]AbuseRecord {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[peer.ID]AbuseRecord{}
	for p, e := range g.peers {
		if pts := decayed(e.points, e.at, now, g.cfg.HalfLife); pts >= minPoints && e.last != "" {
			out[p] = AbuseRecord{Points: pts, LastReason: e.last}
		}
	}
	return out
}
