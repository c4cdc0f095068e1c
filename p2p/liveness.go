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
// in a row (livenessRetry apart), is disconnected, so it leaves peer
// lists within about livenessEvery + 2 × livenessTimeout + livenessRetry
// (21 s). Only silence counts: any answer, a refusal included, is a live
// peer. At most livenessParallel probes run at once.
const (
	livenessEvery    = 10 * time.Second
	livenessTimeout  = 5 * time.Second
	livenessRetry    = time.Second
	livenessParallel = 32
)

// watchLiveness probes the connected peers until ctx ends.
func (n *Node) watchLiveness(ctx context.Context) {
	t := time.NewTicker(livenessEvery)
	defer t.Stop()
	var (
		mu      sync.Mutex
		probing = map[peer.ID]bool{}
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	sem := make(chan struct{}, livenessParallel)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range n.host.Network().Peers() {
			mu.Lock()
			busy := probing[p]
			probing[p] = true
			mu.Unlock()
			if busy {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() {
					<-sem
					mu.Lock()
					delete(probing, p)
					mu.Unlock()
				}()
				if n.silent(ctx, p) {
					n.log.Debug("peer silent: disconnecting", "peer", p, "timeout", livenessTimeout)
					n.closePeer(p, ClosedSilent)
				}
			})
		}
	}
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
