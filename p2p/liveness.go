package p2p

import (
	"context"
	"slices"
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
//
// A peer that pinged this node, or sent it a gossip RPC, within the round
// needs no probe: its process answers and so does the connection. So each
// pair of peers mostly pings one way, busy gossip peers hardly at all, and
// a node short of time does not find silent the peers whose pings it is
// too busy to answer promptly but whose own pings or gossip it was busy
// enough to receive: at 150 nodes on one machine the liveness watch closed
// 3,289 live connections while the network formed, and at 200 nodes,
// counting pings alone, over 8,000 in under 6 minutes (docs/benchmarks.md).
// A peer is still pinged at least every livenessMeasureEvery, since only
// this node's own pings measure the round-trip time that renters match
// latency SLAs with.
const (
	livenessEvery     = 10 * time.Second
	livenessTimeout   = 5 * time.Second
	livenessRetry     = time.Second
	livenessParallel  = 32
	livenessMaxSilent = 2
	// livenessSilentShare divides the peers probed: an eighth.
	livenessSilentShare = 8
	// livenessMeasureEvery is the longest a peer goes without a ping of
	// this node's own, however often it pings this node.
	livenessMeasureEvery = time.Minute
	// livenessSlow is the median round trip of a round's answers above
	// which none of its silent peers is closed: a fifth of the timeout,
	// over any path on the internet.
	livenessSlow = livenessTimeout / 5
)

// pingsSeen is what the liveness watch knows of each connected peer
// besides its answers: when it last pinged this node or sent it gossip
// (heard) and when this node last measured its round trip (measured). It
// holds only peers that had a connection, and each round drops those no
// longer connected.
type pingsSeen struct {
	mu       sync.Mutex
	heard    map[peer.ID]time.Time
	measured map[peer.ID]time.Time
	rtts     []time.Duration // this round's answers
}

func newPingsSeen() *pingsSeen {
	return &pingsSeen{heard: map[peer.ID]time.Time{}, measured: map[peer.ID]time.Time{}}
}

// heardFrom notes that p pinged this node or sent it a gossip RPC.
func (s *pingsSeen) heardFrom(p peer.ID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heard[p] = now
}

func (s *pingsSeen) answered(p peer.ID, now time.Time, rtt time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.measured[p] = now
	if len(s.rtts) < maxRoundRTTs {
		s.rtts = append(s.rtts, rtt)
	}
}

// maxRoundRTTs bounds the round trips a round keeps: the connection
// manager's high mark is far below it.
const maxRoundRTTs = 1024

// endRound returns the median round trip of the answers since the last
// call (0 if none) and starts counting afresh.
func (s *pingsSeen) endRound() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	rtts := s.rtts
	s.rtts = nil
	if len(rtts) == 0 {
		return 0
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

// heardSince reports whether p pinged this node or sent it gossip at or
// after t.
func (s *pingsSeen) heardSince(p peer.ID, t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.heard[p]
	return ok && !at.Before(t)
}

// toProbe is peers less those heard from within the last round and whose
// round trip was measured within livenessMeasureEvery. It forgets the
// peers not in peers (no longer connected).
func (s *pingsSeen) toProbe(peers []peer.ID, now time.Time) []peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	connected := make(map[peer.ID]bool, len(peers))
	var out []peer.ID
	for _, p := range peers {
		connected[p] = true
		heard, h := s.heard[p]
		measured, m := s.measured[p]
		if h && now.Sub(heard) < livenessEvery && m && now.Sub(measured) < livenessMeasureEvery {
			continue
		}
		out = append(out, p)
	}
	for _, m := range []map[peer.ID]time.Time{s.heard, s.measured} {
		for p := range m {
			if !connected[p] {
				delete(m, p)
			}
		}
	}
	return out
}

// answerPing is the ping handler: libp2p's, with the peer's ping noted.
func (n *Node) answerPing(s network.Stream) {
	n.pings.heardFrom(s.Conn().RemotePeer(), time.Now())
	(&ping.PingService{Host: n.host}).PingHandler(s)
}

// silentToClose is the rule above: the silent peers of a round of probed
// are closed only when there are few of them, and only when the peers that
// answered did so promptly (typical is their median round trip): when
// answers take seconds, this node or its link is slow, and silence is
// likelier the same slowness than a dead peer.
func silentToClose(silent []peer.ID, probed int, typical time.Duration) []peer.ID {
	if len(silent) > max(livenessMaxSilent, probed/livenessSilentShare) || len(silent) > probed-len(silent) || typical > livenessSlow {
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
		n.pings.endRound()
		silent := n.probeRound(ctx, n.pings.toProbe(peers, time.Now()))
		if ctx.Err() != nil {
			return
		}
		typical := n.pings.endRound()
		closing := silentToClose(silent, len(peers), typical)
		if len(closing) == 0 && len(silent) > 0 {
			n.log.Debug("many peers silent at once, or answers slow: keeping them", "silent", len(silent), "peers", len(peers), "median_rtt", typical)
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

// silent reports whether p left two pings in a row unanswered and was not
// heard from meanwhile.
func (n *Node) silent(ctx context.Context, p peer.ID) bool {
	start := time.Now()
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
	return ctx.Err() == nil && !n.pings.heardSince(p, start)
}

// unanswered pings p once: true when no answer came within
// livenessTimeout (while ctx lasted).
func (n *Node) unanswered(ctx context.Context, p peer.ID) bool {
	pctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "liveness"), livenessTimeout)
	defer cancel()
	res, ok := <-ping.Ping(pctx, n.host, p)
	if ok && res.Error == nil {
		n.pings.answered(p, time.Now(), res.RTT)
		return false
	}
	// An error before the deadline is an answer (a refusal, a reset).
	return pctx.Err() != nil && ctx.Err() == nil
}
