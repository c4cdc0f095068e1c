package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
)

// FrameLimits bound one request whose answer is a stream of frames (logs,
// file transfers): the request size, each frame's size, and how long the
// stream may stay silent. A serving side that has nothing to send keeps
// the stream alive with empty frames, so a long-lived stream (a followed
// log) is bounded by Idle rather than by a total timeout, and a vanished
// peer is noticed within Idle.
type FrameLimits struct {
	MaxRequest int
	MaxFrame   int
	Idle       time.Duration
	// HeaderTimeout is how long a serving side waits for the whole request
	// (default 5 s, at most Idle): idle and slowloris streams are cut then,
	// and charged. Long-lived streams are for peers that sent a request.
	HeaderTimeout time.Duration
	// MaxPerPeer and MaxConcurrent cap the streams one peer, and all peers
	// together, may have open on the protocol (defaults 32 and 256).
	MaxPerPeer, MaxConcurrent int
}

func (l FrameLimits) header() time.Duration {
	return min(orDefault(l.HeaderTimeout, defaultHeaderTimeout), l.Idle)
}

// FrameHandler serves one framed request. from is the authenticated
// remote peer. send writes one frame (at most MaxFrame bytes; never an
// empty one, which is the keepalive). Returning nil ends the stream
// cleanly (the reader sees io.EOF); an error resets it.
type FrameHandler func(ctx context.Context, from peer.ID, req []byte, send func([]byte) error) error

// HandleFrames registers a framed-response protocol. Memory for the
// request and one frame is reserved against the resource manager under
// service first. ctx, given to the handler, ends when the stream breaks
// or the node's handler is unregistered by Close.
func (n *Node) HandleFrames(proto protocol.ID, service string, lim FrameLimits, h FrameHandler) {
	maxPeer := orDefault(lim.MaxPerPeer, defaultStreamsPerPeer)
	maxProto := orDefault(lim.MaxConcurrent, defaultStreamsPerProtocol)
	n.host.SetStreamHandler(proto, func(s network.Stream) {
		release, ok := n.admitStream(s, proto, service, maxPeer, maxProto, lim.MaxRequest+lim.MaxFrame)
		if !ok {
			return
		}
		defer release()
		req, ok := n.readRequest(s, proto, lim.MaxRequest, lim.header())
		if !ok {
			return
		}
		from := s.Conn().RemotePeer()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		fw := &frameWriter{w: msgio.NewVarintWriter(s), s: s, max: lim.MaxFrame, idle: lim.Idle}
		// The reader never writes after its request; a read that returns
		// means it closed or reset the stream, so the handler stops. A
		// reader that keeps writing is cut off as well.
		go func() {
			_, _ = io.CopyN(io.Discard, s, maxTrailingBytes)
			cancel()
		}()
		stopKeepalive := fw.keepalive(ctx)
		err := h(ctx, from, req, fw.send)
		stopKeepalive()
		if err != nil {
			n.log.Debug("framed request failed", "proto", proto, "peer", from, "err", err)
			n.handlerFailed(proto, from, err)
			_ = s.Reset()
			return
		}
		_ = s.CloseWrite()
		// Wait (bounded) for the reader to finish reading our frames before
		// the stream is freed.
		select {
		case <-ctx.Done():
		case <-time.After(lim.Idle):
		}
		_ = s.Close()
	})
}

// maxTrailingBytes is what a framed-protocol reader may send after its
// request before the serving side stops.
const maxTrailingBytes = 4 << 10

// frameWriter serialises the handler's frames and the keepalives.
type frameWriter struct {
	mu   sync.Mutex
	w    msgio.WriteCloser
	s    network.Stream
	max  int
	idle time.Duration
	last time.Time
}

func (f *frameWriter) send(b []byte) error {
	if len(b) == 0 {
		return errors.New("p2p: empty frame (reserved for keepalive)")
	}
	if len(b) > f.max {
		return fmt.Errorf("p2p: frame of %d bytes exceeds limit %d", len(b), f.max)
	}
	return f.write(b)
}

func (f *frameWriter) write(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.s.SetWriteDeadline(time.Now().Add(f.idle))
	f.last = time.Now()
	return f.w.WriteMsg(b)
}

// keepalive sends an empty frame whenever the stream was silent for a
// third of Idle. It returns a function that stops it.
func (f *frameWriter) keepalive(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(f.idle / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.mu.Lock()
				silent := time.Since(f.last) >= f.idle/3
				f.mu.Unlock()
				if silent {
					if err := f.write(nil); err != nil {
						return
					}
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Frames reads the frames of one framed response.
type Frames struct {
	s    network.Stream
	r    msgio.ReadCloser
	idle time.Duration
	stop func() bool
}

// RequestFrames sends one request to p on proto and returns the response's
// frames. The caller must Close them. ctx bounds the whole exchange.
func (n *Node) RequestFrames(ctx context.Context, p peer.ID, proto protocol.ID, req []byte, lim FrameLimits) (*Frames, error) {
	if p == n.host.ID() {
		return nil, ErrSelfDial
	}
	if len(req) > lim.MaxRequest {
		return nil, fmt.Errorf("p2p: request on %s: %d bytes exceeds limit %d", proto, len(req), lim.MaxRequest)
	}
	octx, cancel := context.WithTimeout(ctx, lim.Idle)
	s, err := n.openStream(octx, p, false, proto)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("p2p: open %s stream to %s: %w", proto, p, err)
	}
	_ = s.SetWriteDeadline(time.Now().Add(lim.Idle))
	if err := msgio.NewVarintWriter(s).WriteMsg(req); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("p2p: write %s request to %s: %w", proto, p, err)
	}
	_ = s.SetWriteDeadline(time.Time{})
	// Deadlines are no-ops on some transports (mocknet); ctx ends the
	// stream either way.
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	return &Frames{s: s, r: msgio.NewVarintReaderSize(s, lim.MaxFrame), idle: lim.Idle, stop: stop}, nil
}

// Next returns the next frame, skipping keepalives. It returns io.EOF once
// the serving side ended the stream cleanly; any other error means the
// stream broke. The returned slice is valid until the next call.
func (f *Frames) Next() ([]byte, error) {
	for {
		_ = f.s.SetReadDeadline(time.Now().Add(f.idle))
		b, err := f.r.ReadMsg()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("p2p: read frame: %w", err)
		}
		if len(b) > 0 {
			return b, nil
		}
		f.r.ReleaseMsg(b)
	}
}

// Close ends the exchange; a reader that stops early resets the stream so
// the serving side stops too.
func (f *Frames) Close() error {
	f.stop()
	return f.s.Reset()
}
