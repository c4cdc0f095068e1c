package p2p

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
)

// ErrMalformed marks a handler error caused by a request no honest peer
// sends (undecodable, failed a signature check). A Handler or FrameHandler
// that returns an error wrapping it gets the sender charged
// AbuseStreamMalformed; other handler errors cost nothing.
var ErrMalformed = errors.New("malformed request")

// Stream refusal reasons, the label values of the stream refusal metric.
const (
	RefusedBanned        = "banned"
	RefusedPeerCap       = "peer_cap"
	RefusedProtocolCap   = "protocol_cap"
	RefusedService       = "service_scope"
	RefusedMemory        = "memory"
	RefusedHeaderTimeout = "header_timeout"
	RefusedOversize      = "oversize"
	RefusedMalformed     = "malformed"
	RefusedReadError     = "read_error"
)

// Stream cap defaults, applied when a limit leaves them zero.
const (
	defaultStreamsPerPeer     = 32
	defaultStreamsPerProtocol = 256
	defaultHeaderTimeout      = 5 * time.Second
)

// streamGate counts the inbound streams each served protocol has open,
// overall and per peer, so that one peer cannot hold more than its share
// of a protocol's handlers and a protocol cannot hold them all.
type streamGate struct {
	mu      sync.Mutex
	open    map[protocol.ID]int
	perPeer map[streamKey]int
}

type streamKey struct {
	proto protocol.ID
	peer  peer.ID
}

func newStreamGate() *streamGate {
	return &streamGate{open: map[protocol.ID]int{}, perPeer: map[streamKey]int{}}
}

// acquire admits one stream, or names the cap it would exceed.
func (g *streamGate) acquire(proto protocol.ID, p peer.ID, maxPeer, maxProto int) (release func(), refused string) {
	k := streamKey{proto, p}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perPeer[k] >= maxPeer {
		return nil, RefusedPeerCap
	}
	if g.open[proto] >= maxProto {
		return nil, RefusedProtocolCap
	}
	g.perPeer[k]++
	g.open[proto]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.perPeer[k]--; g.perPeer[k] <= 0 {
				delete(g.perPeer, k)
			}
			if g.open[proto]--; g.open[proto] <= 0 {
				delete(g.open, proto)
			}
		})
	}, ""
}

// Open is the number of inbound streams open on proto, overall and for p.
func (g *streamGate) count(proto protocol.ID, p peer.ID) (total, fromPeer int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open[proto], g.perPeer[streamKey{proto, p}]
}

// InboundStreams is the number of inbound streams this node is serving on
// proto, overall and from p.
func (n *Node) InboundStreams(proto protocol.ID, p peer.ID) (total, fromPeer int) {
	return n.streams.count(proto, p)
}

// admitStream runs the checks every served stream passes before its
// handler: not banned, under the caps, a service scope, memory reserved.
// On refusal the stream is reset, the refusal counted and, where the peer
// is at fault, charged. release undoes everything admitted.
func (n *Node) admitStream(s network.Stream, proto protocol.ID, service string, maxPeer, maxProto, reserve int) (release func(), ok bool) {
	from := s.Conn().RemotePeer()
	refuse := func(reason string, charge AbuseReason) (func(), bool) {
		n.metrics.streamRefused(proto, reason)
		if charge != "" {
			n.guard.Charge(from, charge, 0)
		}
		_ = s.Reset()
		return nil, false
	}
	if n.blocklist.Has(from) {
		return refuse(RefusedBanned, "")
	}
	rel, capped := n.streams.acquire(proto, from, maxPeer, maxProto)
	if capped != "" {
		charge := AbuseStreamCap
		if capped == RefusedProtocolCap {
			charge = "" // the protocol is busy; this peer is not to blame
		}
		return refuse(capped, charge)
	}
	if err := s.Scope().SetService(service); err != nil {
		rel()
		return refuse(RefusedService, "")
	}
	if err := s.Scope().ReserveMemory(reserve, network.ReservationPriorityAlways); err != nil {
		rel()
		return refuse(RefusedMemory, "")
	}
	return func() {
		s.Scope().ReleaseMemory(reserve)
		rel()
	}, true
}

// readRequest reads the one framed request that opens every served
// stream, and resets the stream unless it arrives whole within header: an
// idle or slowloris peer is cut within seconds whatever the protocol's
// overall timeout, and charged. The timer, not only the stream deadline,
// enforces it, since deadlines are no-ops on some transports (mocknet).
func (n *Node) readRequest(s network.Stream, proto protocol.ID, max int, header time.Duration) ([]byte, bool) {
	var timedOut atomic.Bool
	t := time.AfterFunc(header, func() {
		timedOut.Store(true)
		_ = s.Reset()
	})
	_ = s.SetReadDeadline(time.Now().Add(header))
	req, err := msgio.NewVarintReaderSize(s, max).ReadMsg()
	stopped := t.Stop()
	if err == nil && stopped {
		_ = s.SetReadDeadline(time.Time{})
		return req, true
	}
	from := s.Conn().RemotePeer()
	switch {
	case timedOut.Load() || isTimeout(err):
		n.metrics.streamRefused(proto, RefusedHeaderTimeout)
		n.guard.Charge(from, AbuseStreamIdle, 0)
	case errors.Is(err, msgio.ErrMsgTooLarge):
		n.metrics.streamRefused(proto, RefusedOversize)
		n.guard.Charge(from, AbuseStreamMalformed, 0)
	default:
		n.metrics.streamRefused(proto, RefusedReadError)
	}
	_ = s.Reset()
	return nil, false
}

// handlerFailed accounts for a handler's error: malformed requests are
// charged to the sender.
func (n *Node) handlerFailed(proto protocol.ID, from peer.ID, err error) {
	// errors.ErrUnsupported: a message of another protocol release (a
	// record version or field this build does not know), never charged.
	if errors.Is(err, ErrMalformed) && !errors.Is(err, errors.ErrUnsupported) {
		n.metrics.streamRefused(proto, RefusedMalformed)
		n.guard.Charge(from, AbuseStreamMalformed, 0)
	}
}

// isTimeout: the read hit its deadline (transports report it in their
// own error types, but all with a Timeout method).
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}
