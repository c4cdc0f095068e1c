package trust

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/p2p"
)

// Peers is the operator's view of peers (GET /v1/peers, `idlegrid
// peers`): every connected peer with its gossip score and abuse points,
// and every peer charged or banned, connected or not, sorted by ID. Bans
// come from the store, so a peer banned before a restart is listed; the
// store keeps at most store.MaxBans of them.
func (t *Trust) Peers() []api.Peer {
	byID := map[peer.ID]*api.Peer{}
	get := func(p peer.ID) *api.Peer {
		if e, ok := byID[p]; ok {
			return e
		}
		e := &api.Peer{ID: p.String(), Addrs: []string{}}
		byID[p] = e
		return e
	}
	for _, pi := range t.p2p.Peers() {
		e := get(pi.ID)
		e.Addrs = addrStrings(pi.Addrs)
		e.Direction = pi.Direction.String()
		e.LatencyMs = float64(pi.Latency) / float64(time.Millisecond)
		e.Agent = pi.Agent
		e.Bootstrap = pi.Bootstrap
		e.Idlegrid = slices.Contains(pi.Protocols, string(p2p.DHTProtocol)) || slices.Contains(pi.Protocols, string(p2p.GossipProtocol))
		e.Protocols = pi.Protocols
		e.Path = pi.Path
		e.Connected = true
	}
	for _, pa := range t.p2p.PeerAbuse() {
		e := get(pa.ID)
		e.Connected = e.Connected || pa.Connected
		e.GossipScore = pa.GossipScore
		e.Graylisted = pa.Graylisted
		e.AbusePoints = pa.AbusePoints
		e.LastAbuse = string(pa.LastAbuse)
		e.Blocked = pa.Blocked
		if pa.Banned {
			e.Banned = true
			until := pa.BannedUntil.UTC()
			e.BannedUntil = &until
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
		if e.BannedUntil == nil {
			until := b.Until.UTC()
			e.BannedUntil = &until
		}
	}
	out := make([]api.Peer, 0, len(byID))
	for _, e := range byID {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b api.Peer) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func addrStrings[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}
