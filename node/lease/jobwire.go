package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/p2p"
)

// JobProto is the job protocol (package jobproto): renters follow their
// leases' work (status, logs, results, cancel) and providers fetch what
// they need to run it (spec, artifacts).
const JobProto protocol.ID = "/idlegrid/job/1.0.0"

// JobLimits bound one job-protocol exchange. A followed log or a large
// result streams for as long as it needs; a silent peer is dropped after
// Idle (the serving side sends keepalives). The request itself must
// arrive within HeaderTimeout, so an idle or slowloris stream holds its
// server state seconds, not Idle; long-lived exchanges (a status long
// poll, a followed log) are served only to a party of the lease, which
// the servers check before they wait. One peer may hold MaxPerPeer
// streams: a renter follows each of its leases on a provider (a status
// poll, maybe a log and a download), a provider fetches a spec and an
// artifact per lease.
var JobLimits = p2p.FrameLimits{MaxRequest: jobproto.MaxRequestBytes, MaxFrame: jobproto.MaxFrameBytes, Idle: 30 * time.Second,
	HeaderTimeout: 5 * time.Second, MaxPerPeer: 64}

// SendHeader sends a response's header frame.
func SendHeader(send func([]byte) error, h *jobproto.Header) error {
	b, err := jobproto.EncodeHeader(h)
	if err != nil {
		return err
	}
	return send(b)
}

// Refuse answers with an error header and ends the stream cleanly.
func Refuse(send func([]byte) error, code, format string, a ...any) error {
	return SendHeader(send, &jobproto.Header{Error: fmt.Sprintf(format, a...), Code: code})
}

// SendData streams r as data frames until EOF or ctx ends. Each read is
// sent as it comes (a followed log must not wait for a full frame).
func SendData(ctx context.Context, send func([]byte) error, r io.Reader) error {
	_, rerr, err := CopyToFrames(ctx, send, r)
	if err != nil {
		return err
	}
	return rerr
}

// CopyToFrames sends r as data frames until EOF. It tells a failed read
// (rerr: the source went away) from a failed send (err: the stream broke).
func CopyToFrames(ctx context.Context, send func([]byte) error, r io.Reader) (sent int64, rerr, err error) {
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

// Call sends one job-protocol request to p and reads the header. The
// caller reads any data frames and must close the returned frames.
func Call(ctx context.Context, net *p2p.Node, p peer.ID, req *jobproto.Request) (*jobproto.Header, *p2p.Frames, error) {
	raw, err := jobproto.EncodeRequest(req)
	if err != nil {
		return nil, nil, err
	}
	fr, err := net.RequestFrames(ctx, p, JobProto, raw, JobLimits)
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

// CopyFrames writes the data frames of fr to w until the stream ends.
func CopyFrames(w io.Writer, fr *p2p.Frames) (int64, error) {
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
