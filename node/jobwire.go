package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// JobProto is the job protocol (package jobproto): renters follow their
// leases' work (status, logs, results, cancel) and providers fetch what
// they need to run it (spec, artifacts).
const JobProto protocol.ID = "/idlegrid/job/1.0.0"

// jobLimits bound one job-protocol exchange. A followed log or a large
// result streams for as long as it needs; a silent peer is dropped after
// Idle (the serving side sends keepalives).
var jobLimits = p2p.FrameLimits{MaxRequest: jobproto.MaxRequestBytes, MaxFrame: jobproto.MaxFrameBytes, Idle: 30 * time.Second}

// handleJob routes a job-protocol request to the side that serves it. A
// request the node cannot serve is answered with an error header, never
// with a reset, so the client learns why.
func (n *Node) handleJob(ctx context.Context, from peer.ID, raw []byte, send func([]byte) error) error {
	req, err := jobproto.DecodeRequest(raw)
	if err != nil {
		return refuse(send, jobproto.CodeInvalid, "%v", err)
	}
	switch req.Op {
	case jobproto.OpSpec, jobproto.OpArtifact:
		if n.auct == nil {
			return refuse(send, jobproto.CodeNotFound, "this node is not a renter")
		}
		return n.auct.serveJob(ctx, from, req, send)
	default:
		if n.bidder == nil {
			return refuse(send, jobproto.CodeNotFound, "this node is not a provider")
		}
		return n.bidder.runner.serveJob(ctx, from, req, send)
	}
}

// sendHeader sends a response's header frame.
func sendHeader(send func([]byte) error, h *jobproto.Header) error {
	b, err := jobproto.EncodeHeader(h)
	if err != nil {
		return err
	}
	return send(b)
}

// refuse answers with an error header and ends the stream cleanly.
func refuse(send func([]byte) error, code, format string, a ...any) error {
	return sendHeader(send, &jobproto.Header{Error: fmt.Sprintf(format, a...), Code: code})
}

// sendData streams r as data frames until EOF or ctx ends. Each read is
// sent as it comes (a followed log must not wait for a full frame).
func sendData(ctx context.Context, send func([]byte) error, r io.Reader) error {
	_, rerr, err := copyToFrames(ctx, send, r)
	if err != nil {
		return err
	}
	return rerr
}

// copyToFrames sends r as data frames until EOF. It tells a failed read
// (rerr: the source went away) from a failed send (err: the stream broke).
func copyToFrames(ctx context.Context, send func([]byte) error, r io.Reader) (sent int64, rerr, err error) {
	buf := make([]byte, jobproto.DataFrameBytes)
	for {
		if err := ctx.Err(); err != nil {
			return sent, nil, err
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			if err := send(buf[:k]); err != nil {
				return sent, nil, err
			}
			sent += int64(k)
		}
		switch {
		case errors.Is(rerr, io.EOF):
			return sent, nil, nil
		case rerr != nil:
			return sent, rerr, nil
		}
	}
}

// jobCall sends one job-protocol request and reads the header. The caller
// reads any data frames and must close the returned frames.
func (n *Node) jobCall(ctx context.Context, p peer.ID, req *jobproto.Request) (*jobproto.Header, *p2p.Frames, error) {
	raw, err := jobproto.EncodeRequest(req)
	if err != nil {
		return nil, nil, err
	}
	fr, err := n.p2p.RequestFrames(ctx, p, JobProto, raw, jobLimits)
	if err != nil {
		return nil, nil, err
	}
	b, err := fr.Next()
	if err != nil {
		_ = fr.Close()
		return nil, nil, fmt.Errorf("job %s: read header: %w", req.Op, err)
	}
	h, err := jobproto.DecodeHeader(b)
	if err != nil {
		_ = fr.Close()
		return nil, nil, fmt.Errorf("job %s: %w", req.Op, err)
	}
	if err := h.Err(); err != nil {
		_ = fr.Close()
		return nil, nil, fmt.Errorf("job %s: %w", req.Op, err)
	}
	return h, fr, nil
}

// copyFrames writes the data frames of fr to w until the stream ends.
func copyFrames(w io.Writer, fr *p2p.Frames) (int64, error) {
	var total int64
	for {
		b, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		k, err := w.Write(b)
		total += int64(k)
		if err != nil {
			return total, err
		}
	}
}
