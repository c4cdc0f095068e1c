package p2p

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// BanStore persists bans across restarts; the node implements it with
// its store. Bans are few and small: one row per banned peer.
type BanStore interface {
	// SaveBan records (or extends) p's ban.
	SaveBan(b Ban) error
	// LoadBans returns the saved bans; expired ones may be among them and
	// are skipped (the store may drop them whenever it likes).
	LoadBans() ([]Ban, error)
}

// Ban is one peer's ban.
type Ban struct {
	Peer   peer.ID
	Until  time.Time
	Reason string
}

// protectTag is the connection manager tag for known idlegrid peers.
const protectTag = "idlegrid-known"

// setupGuard builds the guard, restores saved bans and hooks the
// blocklist's refusals into the metrics. It runs before the host exists:
// the ban action reaches the host only when a ban happens.
func (n *Node) setupGuard(bans BanStore) error {
	n.bans = bans
	n.streams = newStreamGate()
	n.guard = NewGuard(n.cfg.Guard, GuardDeps{
		Logger:  n.log,
		Exempt:  func(p peer.ID) bool { return n.boot[p] || (n.host != nil && p == n.host.ID()) },
		Ban:     n.ban,
		Charged: func(r AbuseReason, pts float64) { n.metrics.charged(r, pts) },
	})
	n.blocklist.refused = func(reason string) { n.metrics.connRefused(reason) }
	if bans == nil {
		return nil
	}
	saved, err := bans.LoadBans()
	if err != nil {
		return fmt.Errorf("p2p: load bans: %w", err)
	}
	now := time.Now()
	for _, b := range saved {
		if b.Until.After(now) && !n.boot[b.Peer] {
			n.blocklist.Ban(b.Peer, b.Until)
		}
	}
	return nil
}

// ban is the guard's ban action: refuse the peer until the given time,
// remember that across restarts, and cut its connections now.
func (n *Node) ban(p peer.ID, until time.Time, reason AbuseReason) {
	if !n.blocklist.Ban(p, until) {
		return
	}
	n.metrics.banned(reason)
	if n.bans != nil {
		if err := n.bans.SaveBan(Ban{Peer: p, Until: until, Reason: string(reason)}); err != nil {
			n.log.Warn("save ban", "peer", p, "err", err)
		}
	}
	if n.host != nil && n.ps != nil && n.dht != nil {
		go n.cutOff(p)
	}
}

// Guard is the node's abuse guard: the node's validators and handlers
// charge peers through it.
func (n *Node) Guard() *Guard { return n.guard }

// Ban bans p for d (the guard's BanFor when d <= 0), as the guard does on
// repeated abuse: refused, persisted, disconnected.
func (n *Node) Ban(p peer.ID, d time.Duration, reason AbuseReason) {
	if p == n.host.ID() {
		return
	}
	if d <= 0 {
		d = n.guard.cfg.BanFor
	}
	n.ban(p, time.Now().Add(d), reason)
}

// SetProtected installs the test for peers that must not be trimmed or
// evicted: the node's known idlegrid peers (signed capacity records,
// leases). It may be called at any time; the node applies it to new
// connections and re-applies it to all of them periodically in Run.
// Bootstrap peers are always protected.
func (n *Node) SetProtected(fn func(peer.ID) bool) { n.protected.Store(&fn) }

func (n *Node) isProtected(p peer.ID) bool {
	if n.boot[p] {
		return true
	}
	fn := n.protected.Load()
	return fn != nil && *fn != nil && (*fn)(p)
}

// refreshProtection brings the connection manager's protection of
// connected peers in line with the protected test.
func (n *Node) refreshProtection() {
	cm := n.host.ConnManager()
	for _, p := range n.host.Network().Peers() {
		if n.isProtected(p) {
			cm.Protect(p, protectTag)
		} else {
			cm.Unprotect(p, protectTag)
		}
	}
}

func (n *Node) protectLoop(ctx context.Context) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		n.refreshProtection()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchConns gates connections as they come: blocked peers are closed
// (an injected host may have no gater), known peers are protected, and
// inbound connections pass admission.
func (n *Node) watchConns() {
	n.host.Network().Notify(&network.NotifyBundle{
		DisconnectedF: func(_ network.Network, c network.Conn) {
			n.lostConn.Store(true)
			n.metrics.connClosed(n.closes.closed(c))
			if n.admit != nil {
				n.admit.disconnected(c)
			}
		},
		ConnectedF: func(_ network.Network, c network.Conn) {
			p := c.RemotePeer()
			if n.blocklist.Has(p) {
				n.metrics.connRefused(RefusedBanned)
				n.closeConn(c, ClosedBlocked)
				return
			}
			if n.isProtected(p) {
				n.host.ConnManager().Protect(p, protectTag)
			}
			if n.admit != nil {
				n.admit.connected(c, time.Now())
			}
		},
	})
}

// connValue is what admission weighs before evicting an established
// connection: the connection manager's protection and tags (gossip mesh,
// routing table, message deliveries), the gossip score and the streams
// in use.
func (n *Node) connValue(c network.Conn, p peer.ID) connValue {
	cm := n.host.ConnManager()
	v := connValue{kept: cm.IsProtected(p, ""), score: n.GossipScore(p)}
	if ti := cm.GetTagInfo(p); ti != nil {
		v.score += float64(ti.Value)
	}
	if c != nil {
		v.streams = len(c.GetStreams())
	}
	return v
}

// admissionMax is the inbound cap: configured, else what the resource
// manager leaves room for (newResourceManager), else ConnHigh.
func admissionMax(cfg *Config, rcmgrKeep int) int {
	switch {
	case cfg.Admission.MaxInbound != 0:
		return cfg.Admission.MaxInbound
	case rcmgrKeep > 0:
		return rcmgrKeep
	}
	return cfg.ConnHigh
}

// PeerAbuse is what the node knows of one peer's behaviour, for operators
// (`peers --json`).
type PeerAbuse struct {
	ID peer.ID
	// Connected: the peer has an open connection now.
	Connected bool
	// GossipScore is gossipsub's score of the peer (application score
	// included); Graylisted means it is below the graylist threshold, so
	// gossipsub ignores the peer's RPCs.
	GossipScore float64
	Graylisted  bool
	// AbusePoints are the guard's decayed points, LastAbuse the reason of
	// the latest charge.
	AbusePoints float64
	LastAbuse   AbuseReason
	// Banned: refused until BannedUntil (zero with Blocked).
	Banned      bool
	BannedUntil time.Time
	// Blocked: refused for good (fraud).
	Blocked bool
}

// PeerAbuse describes every connected peer, every peer with abuse points
// and every banned peer that is connected or charged, sorted by peer ID.
func (n *Node) PeerAbuse() []PeerAbuse {
	n.scoresMu.Lock()
	scores := n.scores
	n.scoresMu.Unlock()
	records := n.guard.Records(0.01)
	ids := map[peer.ID]bool{}
	for _, p := range n.host.Network().Peers() {
		ids[p] = true
	}
	for p := range records {
		ids[p] = true
	}
	out := make([]PeerAbuse, 0, len(ids))
	for p := range ids {
		score := scores[p]
		rec := records[p]
		pa := PeerAbuse{
			ID:          p,
			Connected:   n.connected(p),
			GossipScore: score,
			Graylisted:  score < graylistThreshold,
			AbusePoints: rec.Points,
			LastAbuse:   rec.LastReason,
		}
		if until, forever, ok := n.blocklist.BannedUntil(p); ok {
			pa.Banned, pa.BannedUntil, pa.Blocked = !forever, until, forever
		}
		out = append(out, pa)
	}
	slices.SortFunc(out, func(a, b PeerAbuse) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// isGraylisted reports whether p's last gossipsub score snapshot is below
// the graylist threshold.
func (n *Node) isGraylisted(p peer.ID) bool {
	n.scoresMu.Lock()
	defer n.scoresMu.Unlock()
	return n.scores[p] < graylistThreshold
}

// graylisted counts the peers gossipsub scores below the graylist
// threshold, for the metrics.
func (n *Node) graylisted() int {
	n.scoresMu.Lock()
	defer n.scoresMu.Unlock()
	c := 0
	for _, s := range n.scores {
		if s < graylistThreshold {
			c++
		}
	}
	return c
}
