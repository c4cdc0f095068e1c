package hostile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/p2p"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
	msmux "github.com/multiformats/go-multistream"
	"google.golang.org/protobuf/proto"
)

// OpenStream opens a stream to p and completes protocol negotiation
// before returning, so the target's handler is running when it returns
// (libp2p's own NewStream may negotiate lazily, on the first write).
func (a *Attacker) OpenStream(ctx context.Context, p peer.ID, proto protocol.ID) (network.Stream, error) {
	s, err := a.host.Network().NewStream(network.WithAllowLimitedConn(ctx, "hostile"), p)
	if err != nil {
		return nil, fmt.Errorf("hostile: open stream to %s: %w", p, err)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(d)
	}
	if err := msmux.SelectProtoOrFail(proto, s); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("hostile: negotiate %s with %s: %w: %w", proto, p, ErrRefused, err)
	}
	_ = s.SetDeadline(time.Time{})
	_ = s.SetProtocol(proto)
	return s, nil
}

// IdleStreams tries n negotiated streams on proto and sends nothing on
// them. It returns the streams that opened and how many the target
// refused during negotiation; err is for failures to open a stream at all
// (no connection).
func (a *Attacker) IdleStreams(ctx context.Context, p peer.ID, proto protocol.ID, n int) (open []network.Stream, refused int, err error) {
	for range n {
		s, err := a.OpenStream(ctx, p, proto)
		switch {
		case errors.Is(err, ErrRefused):
			refused++
		case err != nil:
			return open, refused, err
		default:
			open = append(open, s)
		}
	}
	return open, refused, nil
}

// Write opens a stream on proto, writes raw bytes (garbage, a lying
// length prefix) and leaves the stream open for the caller.
func (a *Attacker) Write(ctx context.Context, p peer.ID, proto protocol.ID, raw []byte) (network.Stream, error) {
	s, err := a.OpenStream(ctx, p, proto)
	if err != nil {
		return nil, err
	}
	if _, err := s.Write(raw); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("hostile: write to %s: %w", p, err)
	}
	return s, nil
}

// HugeLength is a varint length prefix announcing a 1 TiB frame.
func HugeLength() []byte { return binary.AppendUvarint(nil, 1<<40) }

// Slowloris opens a stream on proto, announces a size-byte request and
// then dribbles one byte every interval until the target cuts the stream
// or ctx ends. done is closed then; cut reports whether the target cut it
// (a write failed) rather than ctx ending.
func (a *Attacker) Slowloris(ctx context.Context, p peer.ID, proto protocol.ID, size int, every time.Duration) (done <-chan struct{}, cut func() bool, err error) {
	s, err := a.Write(ctx, p, proto, binary.AppendUvarint(nil, uint64(size)))
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan struct{})
	var wasCut bool
	go func() {
		defer close(ch)
		defer func() { _ = s.Reset() }()
		t := time.NewTicker(every)
		defer t.Stop()
		for range size {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := s.Write([]byte{'x'}); err != nil {
				wasCut = true
				return
			}
		}
	}()
	return ch, func() bool { <-ch; return wasCut }, nil
}

// StreamCut reports whether the target has reset or closed s: a read
// returns an error within wait.
func StreamCut(s network.Stream, wait time.Duration) bool {
	_ = s.SetReadDeadline(time.Now().Add(wait))
	var b [1]byte
	for {
		if _, err := s.Read(b[:]); err != nil {
			return !isTimeout(err)
		}
	}
}

func isTimeout(err error) bool {
	te, ok := err.(interface{ Timeout() bool })
	return ok && te.Timeout()
}

// PutRecord sends one DHT PUT_VALUE of key=value to p on idlegrid's DHT
// protocol, as a forger would: no validation on our side. It reports
// whether p answered (accepted) it; a refusal is a reset stream.
func (a *Attacker) PutRecord(ctx context.Context, p peer.ID, key string, value []byte) (accepted bool, err error) {
	s, err := a.OpenStream(ctx, p, p2p.DHTProtocol)
	if err != nil {
		return false, err
	}
	defer func() { _ = s.Reset() }()
	msg := &dhtpb.Message{
		Type:   dhtpb.Message_PUT_VALUE,
		Key:    []byte(key),
		Record: &recpb.Record{Key: []byte(key), Value: value},
	}
	raw, err := proto.Marshal(msg)
	if err != nil {
		return false, fmt.Errorf("hostile: marshal put: %w", err)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(d)
	}
	if err := msgio.NewVarintWriter(s).WriteMsg(raw); err != nil {
		return false, fmt.Errorf("hostile: write put: %w", err)
	}
	if _, err := msgio.NewVarintReaderSize(s, 1<<20).ReadMsg(); err != nil {
		return false, nil
	}
	return true, nil
}

// ServeRequests answers proto the way a p2p request/response server does
// (one varint-framed request, one framed response), with whatever answer
// returns: a server that lies. A nil answer resets the stream. Set it
// before connecting, so identify announces the protocol.
func (a *Attacker) ServeRequests(proto protocol.ID, answer func(from peer.ID, req []byte) []byte) {
	a.host.SetStreamHandler(proto, func(s network.Stream) {
		defer func() { _ = s.Close() }()
		_ = s.SetDeadline(time.Now().Add(time.Minute))
		r := msgio.NewVarintReaderSize(s, 1<<20)
		req, err := r.ReadMsg()
		if err != nil {
			_ = s.Reset()
			return
		}
		resp := answer(s.Conn().RemotePeer(), req)
		if resp == nil {
			_ = s.Reset()
			return
		}
		if err := msgio.NewVarintWriter(s).WriteMsg(resp); err != nil {
			_ = s.Reset()
		}
	})
}
