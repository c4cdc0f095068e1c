package node

import (
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/trust"
)

// Peers implements api.Backend: the trust room's peers view in the API's
// terms.
func (b apiBackend) Peers() []api.Peer {
	peers := b.n.trust.Peers()
	out := make([]api.Peer, len(peers))
	for i, p := range peers {
		out[i] = apiPeer(p)
	}
	return out
}

func apiPeer(p trust.Peer) api.Peer {
	e := api.Peer{
		ID: p.ID.String(), Addrs: []string{}, Idlegrid: p.Idlegrid, Connected: p.Connected,
		GossipScore: p.GossipScore, Graylisted: p.Graylisted,
		AbusePoints: p.AbusePoints, LastAbuse: string(p.LastAbuse),
		Banned: p.Banned, BanReason: p.BanReason, Blocked: p.Blocked,
	}
	if c := p.Conn; c != nil {
		e.Addrs = addrStrings(c.Addrs)
		e.Direction = c.Direction.String()
		e.LatencyMs = float64(c.Latency) / float64(time.Millisecond)
		e.Agent, e.Bootstrap, e.Protocols, e.Path = c.Agent, c.Bootstrap, c.Protocols, c.Path
	}
	if !p.BannedUntil.IsZero() {
		until := p.BannedUntil
		e.BannedUntil = &until
	}
	return e
}
