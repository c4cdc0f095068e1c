package nodetest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	basicconnmgr "github.com/libp2p/go-libp2p/p2p/net/connmgr"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
)

// limitedHost gives a mocknet host a real connection manager. mocknet
// builds hosts with a null one, and the DHT and gossipsub read
// host.ConnManager() once, at construction, to tag and protect peers; so
// without this the cluster would silently ignore cfg.P2P's water marks.
//
// It also keeps Cluster.Cut's peers off: see NewStream.
type limitedHost struct {
	host.Host
	cm *basicconnmgr.BasicConnMgr

	mu  sync.Mutex
	cut map[peer.ID]bool // peers Cluster.Cut took this host off from
}

func (h *limitedHost) ConnManager() connmgr.ConnManager { return h.cm }
func (h *limitedHost) Close() error                     { return errors.Join(h.Host.Close(), h.cm.Close()) }

// NewStream refuses a peer this host is cut off from, even when mocknet
// opened the stream. Mocknet closes a connection by resetting its streams
// first and dropping the connection from its peer's list after; a stream
// opened in between (gossipsub reopens its stream at once, with no
// backoff, when the old one is reset and the peer is still listed as
// connected) is added to the closed connection, escapes the reset, and,
// as a mocknet stream is an in-process pipe that no link or connection
// carries, goes on delivering between peers that have no connection left.
// Cut marks both sides before it closes anything, so a stream that
// returns here after the close began is seen cut and reset (which breaks
// both ends of the pipe); one opened before is reset by the close.
func (h *limitedHost) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(ctx, p, pids...)
	if err == nil && h.isCut(p) {
		_ = s.Reset()
		return nil, fmt.Errorf("nodetest: %s is cut off from %s", h.ID(), p)
	}
	return s, err
}

// setCut marks p cut off from this host, or (cut false) reachable again.
func (h *limitedHost) setCut(p peer.ID, cut bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cut {
		h.cut[p] = true
	} else {
		delete(h.cut, p)
	}
}

func (h *limitedHost) isCut(p peer.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cut[p]
}

// limitedPeer adds m to the mocknet behind a connection manager built from
// m's water marks and grace period.
func limitedPeer(mn mocknet.Mocknet, m *Member) (*limitedHost, error) {
	h, err := mn.AddPeer(m.Key, m.Addr)
	if err != nil {
		return nil, fmt.Errorf("mocknet host: %w", err)
	}
	p := m.Config.P2P
	cm, err := basicconnmgr.NewConnManager(p.ConnLow, p.ConnHigh, basicconnmgr.WithGracePeriod(p.ConnGrace))
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	// What bhost.NewHost does with a manager: it learns of connections
	// through the network's notifications.
	h.Network().Notify(cm.Notifee())
	return &limitedHost{Host: h, cm: cm, cut: map[peer.ID]bool{}}, nil
}
