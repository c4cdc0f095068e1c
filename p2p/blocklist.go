package p2p

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Blocklist is a connection gater that refuses blocked peers: no dial to
// them, no connection from them. It holds two kinds of entries: blocks,
// which last for the process (the node blocks a peer once it has verified
// a fraud proof against it), and bans, which expire (the abuse guard bans
// a peer that keeps abusing). It also serves as gossipsub's blacklist, so
// an expired ban lets the peer's messages in again. It is safe for
// concurrent use.
type Blocklist struct {
	now func() time.Time
	// refused counts connections the gater turned away; may be nil.
	refused func(reason string)

	mu sync.RWMutex
	// until is when the entry ends; the zero time means never.
	until map[peer.ID]time.Time
	// strangers are peers refused until a time apart from bans
	// (AddStranger), with a bound of their own.
	strangers map[peer.ID]time.Time
}

// maxStrangers bounds the stranger entries. They are kept apart from
// bans because a key can prove its own fraud for two signatures: a flood
// of such proofs must evict only its own kind, never a ban.
const maxStrangers = 1 << 12

// maxBans bounds the ban entries: a flood of fresh identities each earning
// a ban must not grow memory without end. Blocks are never evicted here:
// the node bounds them with the proofs behind them (Demote).
const maxBans = 1 << 16

// NewBlocklist returns an empty blocklist.
func NewBlocklist() *Blocklist { return &Blocklist{now: time.Now, until: map[peer.ID]time.Time{}} }

// Add blocks p for good; it reports whether p was not blocked before.
func (b *Blocklist) Add(p peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.until[p]
	if ok && u.IsZero() {
		return false
	}
	b.until[p] = time.Time{}
	return !ok || !u.After(b.now())
}

// Unblock ends p's block for good (Add); a ban stays. It reports whether
// p was blocked for good.
func (b *Blocklist) Unblock(p peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.until[p]; !ok || !u.IsZero() {
		return false
	}
	delete(b.until, p)
	return true
}

// Ban blocks p until the given time; it reports whether p was not blocked
// before. A ban never shortens an entry that lasts longer.
func (b *Blocklist) Ban(p peer.ID, until time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	u, ok := b.until[p]
	active := ok && (u.IsZero() || u.After(now))
	if ok && (u.IsZero() || !until.After(u)) {
		return !active
	}
	if !ok && len(b.until) >= maxBans {
		b.evictLocked(now)
	}
	b.until[p] = until
	return !active
}

// evictLocked drops expired bans, or else the ban that ends first.
func (b *Blocklist) evictLocked(now time.Time) {
	var first peer.ID
	var firstAt time.Time
	for p, u := range b.until {
		if u.IsZero() {
			continue
		}
		if !u.After(now) {
			delete(b.until, p)
			continue
		}
		if firstAt.IsZero() || u.Before(firstAt) {
			first, firstAt = p, u
		}
	}
	if len(b.until) >= maxBans && first != "" {
		delete(b.until, first)
	}
}

// AddStranger refuses p until the given time, as a stranger entry (see
// maxStrangers); it reports whether p was not refused before. Past the
// bound the stranger entry that ends first makes room.
func (b *Blocklist) AddStranger(p peer.ID, until time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.hasLocked(p)
	if b.strangers == nil {
		b.strangers = map[peer.ID]time.Time{}
	}
	if _, ok := b.strangers[p]; !ok && len(b.strangers) >= maxStrangers {
		now := b.now()
		var first peer.ID
		var firstAt time.Time
		for q, u := range b.strangers {
			if !u.After(now) {
				first = q
				break
			}
			if first == "" || u.Before(firstAt) {
				first, firstAt = q, u
			}
		}
		delete(b.strangers, first)
	}
	if u, ok := b.strangers[p]; !ok || until.After(u) {
		b.strangers[p] = until
	}
	return !was
}

// Has reports whether p is blocked or banned now.
func (b *Blocklist) Has(p peer.ID) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.hasLocked(p)
}

func (b *Blocklist) hasLocked(p peer.ID) bool {
	if u, ok := b.strangers[p]; ok && u.After(b.now()) {
		return true
	}
	u, ok := b.until[p]
	return ok && (u.IsZero() || u.After(b.now()))
}

// BannedUntil is when p's ban ends: ok is false when p is neither banned
// nor blocked, and forever is true for a block.
func (b *Blocklist) BannedUntil(p peer.ID) (until time.Time, forever, ok bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	u, found := b.until[p]
	switch {
	case !found:
		return time.Time{}, false, false
	case u.IsZero():
		return time.Time{}, true, true
	case u.After(b.now()):
		return u, false, true
	}
	return time.Time{}, false, false
}

// Refusal is a stranger refused until a time (AddStranger).
type Refusal struct {
	Peer  peer.ID
	Until time.Time
}

// Strangers are the stranger entries in force now, sorted by peer ID.
func (b *Blocklist) Strangers() []Refusal {
	b.mu.RLock()
	defer b.mu.RUnlock()
	now := b.now()
	out := make([]Refusal, 0, len(b.strangers))
	for p, u := range b.strangers {
		if u.After(now) {
			out = append(out, Refusal{Peer: p, Until: u})
		}
	}
	slices.SortFunc(out, func(a, b Refusal) int { return strings.Compare(string(a.Peer), string(b.Peer)) })
	return out
}

// Count is the number of peers blocked or banned now.
func (b *Blocklist) Count() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	now, n := b.now(), 0
	for _, u := range b.until {
		if u.IsZero() || u.After(now) {
			n++
		}
	}
	return n
}

// gossipBlacklist lets gossipsub consult the blocklist, so that it drops
// a banned peer and takes it back once the ban expires. Entries are made
// by the node, never by gossipsub: its Add (called by BlacklistPeer) only
// confirms.
type gossipBlacklist struct{ b *Blocklist }

func (g gossipBlacklist) Add(peer.ID) bool        { return true }
func (g gossipBlacklist) Contains(p peer.ID) bool { return g.b.Has(p) }

func (b *Blocklist) gate(p peer.ID) bool {
	if b.Has(p) {
		if b.refused != nil {
			b.refused(RefusedBanned)
		}
		return false
	}
	return true
}

// InterceptPeerDial implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptPeerDial(p peer.ID) bool { return !b.Has(p) }

// InterceptAddrDial implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return !b.Has(p) }

// InterceptAccept implements connmgr.ConnectionGater: the peer is not
// known before the handshake, so the check happens in InterceptSecured.
func (b *Blocklist) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return b.gate(p)
}

// InterceptUpgraded implements connmgr.ConnectionGater.
func (b *Blocklist) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// Block refuses p from now on: its connections are closed, gossipsub drops
// its messages, and the gater refuses new connections.
func (n *Node) Block(p peer.ID) {
	if p == n.host.ID() {
		return
	}
	if n.blocklist.Add(p) {
		n.log.Warn("peer blocked", "peer", p)
	}
	n.cutOff(p)
}

// RefuseStranger refuses p for d, apart from the bans and with a bound of
// its own (Blocklist.AddStranger): a peer proven to cheat that this node
// had no record of. Its connections are closed now.
func (n *Node) RefuseStranger(p peer.ID, d time.Duration) {
	if p == n.host.ID() || n.boot[p] {
		return
	}
	if n.blocklist.AddStranger(p, time.Now().Add(d)) {
		n.log.Info("peer refused: proven to cheat, unknown here", "peer", p, "for", d)
	}
	n.cutOff(p)
}

// Demote turns p's block for good (Block) into a refusal for d, as a
// stranger's (RefuseStranger): the node keeps a bounded number of proofs
// for good, and p's made room for another.
func (n *Node) Demote(p peer.ID, d time.Duration) {
	if n.blocklist.Unblock(p) {
		n.log.Info("peer blocked for good now refused for a while: its proof made room for another", "peer", p, "for", d)
	}
	n.RefuseStranger(p, d)
}

// RefusedStrangers are the peers refused by RefuseStranger now, sorted
// by peer ID.
func (n *Node) RefusedStrangers() []Refusal { return n.blocklist.Strangers() }

// cutOff closes p's connections and forgets it as a DHT and gossip peer.
func (n *Node) cutOff(p peer.ID) {
	n.ps.BlacklistPeer(p)
	n.closePeer(p, ClosedBlocked)
	n.dht.RoutingTable().RemovePeer(p)
}

// Blocked reports whether p is blocked or banned.
func (n *Node) Blocked(p peer.ID) bool { return n.blocklist.Has(p) }
