package p2p

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// A peer that dies without closing its connections (a killed process on
// QUIC, a machine cut off) would stay connected until QUIC's 30 s idle
// timeout, or TCP's far longer one. Every livenessEvery each connected
// peer is pinged; one that does not answer within livenessTimeout, twice
// in a row (livenessRetry apart), is silent, so it leaves peer lists
// within about livenessEvery + 2 × livenessTimeout + livenessRetry
// (21 s). Only silence counts: any answer, a refusal included, is a live
// peer. At most livenessParallel probes run at once.
//
// A dead peer is one peer; when many fall silent in the same round, the
// likelier cause is this node (too busy to read the answers in time) or
// its own link, and closing every connection would only add handshakes
// to a node that is short of time already: at 200 nodes on one machine
// the liveness closes tore the network down in waves (3,319 in the first
// 90 s, the bootstrap peer from 101 inbound connections to 16). So the
// silent peers of a round are closed only when they are few: at most
// livenessMaxSilent or an eighth of the peers probed
// (livenessSilentShare), and no more than answered. A node with few
// peers, none or half of which answered, closed its own way out of the
// network: at 200 nodes on one machine, nodes that closed their only
// connection as silent could not dial back in for minutes. TCP's stream
// muxer keep-alive and QUIC's idle timeout still close the rest if they
// are really gone.
const (
	livenessEvery     = 10 * time.Second
	livenessTimeout   = 5 * time.Second
	livenessRetry     = time.Second
	livenessParallel  = 32
	livenessMaxSilent = 2
	// livenessSilentShare divides the peers probed: an eighth.
	livenessSilentShare = 8
)

// silentToClose is the rule above: the silent peers of a round of probed
// are closed only when there are few of them.
func silentToClose(silent []peer.ID, probed int) []peer.ID {
	if len(silent) > max(livenessMaxSilent, probed/livenessSilentShare) || len(silent) > probed-len(silent) {
		return nil
	}
	return silent
}

// watchLiveness probes the connected peers, one round per livenessEvery
// (a round that takes longer delays the next), until ctx ends.
func (n *Node) watchLiveness(ctx context.Context) {
	t := time.NewTicker(livenessEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		peers := n.host.Network().Peers()
		silent := n.probeRound(ctx, peers)
		if ctx.Err() != nil {
			return
		}
		closing := silentToClose(silent, len(peers))
		if len(closing) == 0 && len(silent) > 0 {
			n.log.Debug("many peers silent at once: keeping them", "silent", len(silent), "probed", len(peers))
		}
		for _, p := range closing {
			n.log.Debug("peer silent: disconnecting", "peer", p, "timeout", livenessTimeout)
			n.closePeer(p, ClosedSilent)
		}
	}
}

// probeRound pings peers, livenessParallel at a time, and returns the
// silent ones.
func (n *Node) probeRound(ctx context.Context, peers []peer.ID) []peer.ID {
	var (
		mu     sync.Mutex
		silent []peer.ID
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, livenessParallel)
	for _, p := range peers {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if n.silent(ctx, p) {
				mu.Lock()
				silent = append(silent, p)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return silent
}

// silent reports whether p left two pings in a row unanswered.
func (n *Node) silent(ctx context.Context, p peer.ID) bool {
	for try := range 2 {
		if try > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(livenessRetry):
			}
		}
		if n.host.Network().Connectedness(p) != network.Connected || !n.unanswered(ctx, p) {
			return false
		}
	}
	return ctx.Err() == nil
}

// unanswered pings p once: true when no answer came within
// livenessTimeout (while ctx lasted).
func (n *Node) unanswered(ctx context.Context, p peer.ID) bool {
	pctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "liveness"), livenessTimeout)
	defer cancel()
	res, ok := <-ping.Ping(pctx, n.host, p)
	if ok && res.Error == nil {
		return false
	}
	// An error before the deadline is an answer (a refusal, a reset).
	return pctx.Err() != nil && ctx.Err() == nil
}
