package p2p

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
)

// ErrSelfDial is returned when a request targets this node itself: libp2p
// cannot open a stream to its own host, so callers short-cut in process.
var ErrSelfDial = errors.New("p2p: request to self")

// Handler answers one request on a request/response protocol. from is the
// authenticated remote peer. Returning an error resets the stream.
type Handler func(ctx context.Context, from peer.ID, req []byte) ([]byte, error)

// StreamLimits bound one request/response exchange.
type StreamLimits struct {
	MaxRequest  int
	MaxResponse int
	Timeout     time.Duration
	// HeaderTimeout is how long a serving side waits for the whole request
	// (default 5 s, at most Timeout): idle and slowloris streams are cut
	// then, and charged.
	HeaderTimeout time.Duration
	// MaxPerPeer and MaxConcurrent cap the streams one peer, and all peers
	// together, may have open on the protocol (defaults 32 and 256).
	MaxPerPeer, MaxConcurrent int
	// OverLimitedRelay lets the exchange run over a relayed connection
	// whose relay limits circuits (relay v2's default: 2 min and 128 KiB
	// each way): set it on small messages a NATed peer must get even when
	// no direct connection comes up (bids, notices). Without it a request
	// waits, within Timeout, for a direct connection, and fails with a
	// *RelayOnlyError when none comes.
	OverLimitedRelay bool
}

func (l StreamLimits) header() time.Duration {
	return min(orDefault(l.HeaderTimeout, defaultHeaderTimeout), l.Timeout)
}

// HandleRequests registers a size-limited, deadline-bound request/response
// protocol: one varint-framed request, one framed response, reset on any
// error. Memory for both frames is reserved against the resource manager
// under the given service name first.
func (n *Node) HandleRequests(proto protocol.ID, service string, lim StreamLimits, h Handler) {
	maxPeer := orDefault(lim.MaxPerPeer, defaultStreamsPerPeer)
	maxProto := orDefault(lim.MaxConcurrent, defaultStreamsPerProtocol)
	n.host.SetStreamHandler(proto, func(s network.Stream) {
		release, ok := n.admitStream(s, proto, service, maxPeer, maxProto, lim.MaxRequest+lim.MaxResponse)
		if !ok {
			return
		}
		defer release()
		ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout)
		defer cancel()
		_ = s.SetDeadline(time.Now().Add(lim.Timeout))
		// Deadlines are no-ops on some transports (mocknet); the context
		// bounds the exchange either way.
		stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
		defer stop()
		req, ok := n.readRequest(s, proto, lim.MaxRequest, lim.header())
		if !ok {
			return
		}
		from := s.Conn().RemotePeer()
		resp, err := h(ctx, from, req)
		if err != nil || len(resp) > lim.MaxResponse {
			n.log.Debug("request failed", "proto", proto, "peer", from, "err", err, "resp_bytes", len(resp))
			n.handlerFailed(proto, from, err)
			_ = s.Reset()
			return
		}
		_ = s.SetWriteDeadline(time.Now().Add(lim.Timeout))
		if err := msgio.NewVarintWriter(s).WriteMsg(resp); err != nil {
			_ = s.Reset()
			return
		}
		_ = s.Close()
	})
}

// Request sends one request to p on proto and returns the response.
func (n *Node) Request(ctx context.Context, p peer.ID, proto protocol.ID, req []byte, lim StreamLimits) ([]byte, error) {
	if p == n.host.ID() {
		return nil, ErrSelfDial
	}
	if len(req) > lim.MaxRequest {
		return nil, fmt.Errorf("p2p: request on %s: %d bytes exceeds limit %d", proto, len(req), lim.MaxRequest)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	s, err := n.openStream(ctx, p, lim.OverLimitedRelay, proto)
	if err != nil {
		return nil, fmt.Errorf("p2p: open %s stream to %s: %w", proto, p, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	_ = s.SetDeadline(time.Now().Add(lim.Timeout))
	if err := msgio.NewVarintWriter(s).WriteMsg(req); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("p2p: write %s request to %s: %w", proto, p, err)
	}
	_ = s.CloseWrite()
	resp, err := msgio.NewVarintReaderSize(s, lim.MaxResponse).ReadMsg()
	if err != nil {
		_ = s.Reset()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("p2p: read %s response from %s: %w", proto, p, err)
	}
	_ = s.Close()
	return resp, nil
}
