package p2p

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
)

// TunnelLimits bound a raw bidirectional stream: one framed header, then
// bytes both ways for as long as the handler keeps it. Size, rate and idle
// limits on those bytes are the handler's; the caps here are those every
// served stream has.
type TunnelLimits struct {
	MaxHeader int
	// HeaderTimeout is how long the serving side waits for the header
	// (default 5 s); idle and slowloris streams are cut then, and charged.
	HeaderTimeout time.Duration
	// OpenTimeout bounds opening the stream and writing the header on the
	// dialling side (default 10 s).
	OpenTimeout time.Duration
	// Buffer is the memory reserved per stream for copying (default 64 KiB).
	Buffer int
	// MaxPerPeer and MaxConcurrent cap the streams one peer, and all peers
	// together, may have open on the protocol (defaults 32 and 256).
	MaxPerPeer, MaxConcurrent int
}

// TunnelHandler serves one tunnel. from is the authenticated remote peer,
// header its first frame, s the stream after it. The handler owns s until
// it returns; returning nil closes it, an error resets it (ErrMalformed is
// charged to the peer).
type TunnelHandler func(ctx context.Context, from peer.ID, header []byte, s io.ReadWriteCloser) error

// HandleTunnel registers a raw bidirectional stream protocol. A tunnel
// lasts as long as its handler: the handler, not a timeout here, decides
// when an open tunnel ends (idle limits, the lease ending).
func (n *Node) HandleTunnel(proto protocol.ID, service string, lim TunnelLimits, h TunnelHandler) {
	maxPeer := orDefault(lim.MaxPerPeer, defaultStreamsPerPeer)
	maxProto := orDefault(lim.MaxConcurrent, defaultStreamsPerProtocol)
	buf := orDefault(lim.Buffer, 64<<10)
	header := orDefault(lim.HeaderTimeout, defaultHeaderTimeout)
	n.host.SetStreamHandler(proto, func(s network.Stream) {
		release, ok := n.admitStream(s, proto, service, maxPeer, maxProto, lim.MaxHeader+buf)
		if !ok {
			return
		}
		defer release()
		hdr, ok := n.readRequest(s, proto, lim.MaxHeader, header)
		if !ok {
			return
		}
		from := s.Conn().RemotePeer()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := h(ctx, from, hdr, s); err != nil {
			n.log.Debug("tunnel failed", "proto", proto, "peer", from, "err", err)
			n.handlerFailed(proto, from, err)
			_ = s.Reset()
			return
		}
		_ = s.Close()
	})
}

// OpenTunnel opens a tunnel to p on proto and sends header. The caller
// owns the returned stream: Close ends it cleanly, Reset aborts it, and
// CloseWrite half-closes it.
func (n *Node) OpenTunnel(ctx context.Context, p peer.ID, proto protocol.ID, header []byte, lim TunnelLimits) (network.Stream, error) {
	if p == n.host.ID() {
		return nil, ErrSelfDial
	}
	if len(header) > lim.MaxHeader {
		return nil, fmt.Errorf("p2p: tunnel header on %s: %d bytes exceeds limit %d", proto, len(header), lim.MaxHeader)
	}
	octx, cancel := context.WithTimeout(ctx, orDefault(lim.OpenTimeout, 10*time.Second))
	defer cancel()
	s, err := n.openStream(octx, p, false, proto)
	if err != nil {
		return nil, fmt.Errorf("p2p: open %s stream to %s: %w", proto, p, err)
	}
	if dl, ok := octx.Deadline(); ok {
		_ = s.SetWriteDeadline(dl)
	}
	if err := msgio.NewVarintWriter(s).WriteMsg(header); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("p2p: write %s header to %s: %w", proto, p, err)
	}
	_ = s.SetWriteDeadline(time.Time{})
	return s, nil
}
