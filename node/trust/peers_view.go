package trust

import (
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/p2p"
)

// Peer is what the node knows of one peer: its connection, if it has one,
// what it was charged for, and whether it is refused.
type Peer struct {
	ID peer.ID
	// Conn describes the peer's open connection; nil when it has none.
	Conn *p2p.PeerInfo
	// Idlegrid is true when the peer speaks our DHT or gossip protocol.
	Idlegrid bool

	// Connected: the peer has an open connection now.
	Connected bool
	// GossipScore is gossipsub's score of the peer, abuse included;
	// Graylisted means the node ignores its gossip.
	GossipScore float64
	Graylisted  bool
	// AbusePoints are what the peer has been charged for abuse, decaying;
	// LastAbuse is the reason of the latest charge.
	AbusePoints float64
	LastAbuse   p2p.AbuseReason
	// Banned: refused until BannedUntil, for BanReason (kept across
	// restarts). Blocked: refused for good (a proven fraud). A zero
	// BannedUntil is none.
	Banned      bool
	BannedUntil time.Time
	BanReason   string
	Blocked     bool
}

// StrangerFraudReason is the ban reason the peers view gives a peer
// refused as a stranger proven to cheat (p2p.Node.RefuseStranger).
const StrangerFraudReason = "proven_fraud"

// Peers is the operator's view of peers (GET /v1/peers, `idlegrid
// peers`): every connected peer with its gossip score and abuse points,
// and every peer charged, banned or refused as a stranger proven to
// cheat, connected or not, sorted by ID. Bans
// come from the store, so a peer banned before a restart is listed; the
// store keeps at most store.MaxBans of them.
func (t *Trust) Peers() []Peer {
	byID := map[peer.ID]*Peer{}
	get := func(p peer.ID) *Peer {
		if e, ok := byID[p]; ok {
			return e
		}
		e := &Peer{ID: p}
		byID[p] = e
		return e
	}
	for _, pi := range t.p2p.Peers() {
		e := get(pi.ID)
		e.Conn = &pi
		e.Idlegrid = slices.Contains(pi.Protocols, string(p2p.DHTProtocol)) || slices.Contains(pi.Protocols, string(p2p.GossipProtocol))
		e.Connected = true
	}
	for _, pa := range t.p2p.PeerAbuse() {
		e := get(pa.ID)
		e.Connected = e.Connected || pa.Connected
		e.GossipScore = pa.GossipScore
		e.Graylisted = pa.Graylisted
		e.AbusePoints = pa.AbusePoints
		e.LastAbuse = pa.LastAbuse
		e.Blocked = pa.Blocked
		if pa.Banned {
			e.Banned = true
			e.BannedUntil = pa.BannedUntil.UTC()
		}
	}
	bans, err := t.db.LoadBans()
	if err != nil {
		t.log.Warn("peers: load bans", "err", err)
	}
	for _, b := range bans {
		if !t.p2p.Blocked(b.Peer) {
			continue // lifted (a bootstrap peer is never banned)
		}
		e := get(b.Peer)
		e.Banned, e.BanReason = true, b.Reason
		if e.BannedUntil.IsZero() {
			e.BannedUntil = b.Until.UTC()
		}
	}
	for _, r := range t.p2p.RefusedStrangers() {
		// Proven to cheat, and unknown here: refused for a while, apart
		// from the abuse bans (ApplyFraud, gossip.go).
		e := get(r.Peer)
		e.Banned, e.BanReason = true, StrangerFraudReason
		if e.BannedUntil.IsZero() || r.Until.After(e.BannedUntil) {
			e.BannedUntil = r.Until.UTC()
		}
	}
	out := make([]Peer, 0, len(byID))
	for _, e := range byID {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}
