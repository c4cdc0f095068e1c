package forward

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// Proto is the tunnel protocol.
const Proto protocol.ID = "/idlegrid/forward/1.0.0"

// Wire bounds.
const (
	// MaxHeaderBytes bounds the header frame.
	MaxHeaderBytes = 256
	// MaxReplyBytes bounds the reply frame.
	MaxReplyBytes = 512
	maxLeaseIDLen = 128
	headerVersion = 1
)

// ErrMalformed: a header or reply does not decode.
var ErrMalformed = errors.New("forward: malformed frame")

// Header opens a tunnel: which lease's service, which of its ports.
type Header struct {
	LeaseID string
	Port    uint16
}

// Encode is version (1 byte), port (2 bytes, big endian), then the lease
// ID (1 length byte and its bytes).
func (h Header) Encode() ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 4+len(h.LeaseID))
	b = append(b, headerVersion)
	b = binary.BigEndian.AppendUint16(b, h.Port)
	b = append(b, byte(len(h.LeaseID)))
	return append(b, h.LeaseID...), nil
}

// DecodeHeader parses a header frame (at most MaxHeaderBytes).
func DecodeHeader(b []byte) (Header, error) {
	if len(b) > MaxHeaderBytes || len(b) < 4 {
		return Header{}, fmt.Errorf("%w: header of %d bytes", ErrMalformed, len(b))
	}
	if b[0] > headerVersion {
		// A newer release's header: refused, but never charged to its
		// sender (errors.ErrUnsupported; docs/protocol.md, "Compatibility").
		return Header{}, fmt.Errorf("%w: header version %d, want %d: %w", ErrMalformed, b[0], headerVersion, errors.ErrUnsupported)
	}
	if b[0] != headerVersion {
		return Header{}, fmt.Errorf("%w: header version %d, want %d", ErrMalformed, b[0], headerVersion)
	}
	n := int(b[3])
	if len(b) != 4+n {
		return Header{}, fmt.Errorf("%w: lease ID of %d bytes in a %d-byte header", ErrMalformed, n, len(b))
	}
	h := Header{Port: binary.BigEndian.Uint16(b[1:3]), LeaseID: string(b[4:])}
	if err := h.validate(); err != nil {
		return Header{}, err
	}
	return h, nil
}

func (h Header) validate() error {
	if h.Port == 0 {
		return fmt.Errorf("%w: port 0", ErrMalformed)
	}
	if h.LeaseID == "" || len(h.LeaseID) > maxLeaseIDLen {
		return fmt.Errorf("%w: lease ID of %d bytes (1..%d)", ErrMalformed, len(h.LeaseID), maxLeaseIDLen)
	}
	for i := range len(h.LeaseID) {
		if c := h.LeaseID[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: lease ID is not printable ASCII", ErrMalformed)
		}
	}
	return nil
}

// Reply codes.
const (
	ReplyOK           byte = 0
	ReplyRefused      byte = 1 // not this peer's lease, or not a service port
	ReplyNotFound     byte = 2 // no such lease here, or it is not running
	ReplyUnavailable  byte = 3 // the container's port does not answer
	replyMaxKnownCode      = ReplyUnavailable
)

// Reply answers a header: a code, then a reason for anything but ReplyOK.
type Reply struct {
	Code   byte
	Reason string
}

// Encode is the code byte followed by the reason, cut to fit.
func (r Reply) Encode() []byte {
	reason := r.Reason
	if len(reason) > MaxReplyBytes-1 {
		reason = reason[:MaxReplyBytes-1]
	}
	return append([]byte{r.Code}, reason...)
}

// DecodeReply parses a reply frame (at most MaxReplyBytes).
func DecodeReply(b []byte) (Reply, error) {
	if len(b) == 0 || len(b) > MaxReplyBytes || b[0] > replyMaxKnownCode {
		return Reply{}, fmt.Errorf("%w: reply of %d bytes", ErrMalformed, len(b))
	}
	return Reply{Code: b[0], Reason: string(b[1:])}, nil
}

// Err is nil for ReplyOK and an error saying why otherwise.
func (r Reply) Err() error {
	switch r.Code {
	case ReplyOK:
		return nil
	case ReplyRefused:
		return fmt.Errorf("%w: %s", ErrRefused, r.Reason)
	case ReplyNotFound:
		return fmt.Errorf("%w: %s", ErrNotFound, r.Reason)
	default:
		return fmt.Errorf("%w: %s", ErrUnavailable, r.Reason)
	}
}

// Errors a tunnel's opening can end with; Server.Resolve returns them too.
var (
	ErrRefused     = errors.New("forward: refused")
	ErrNotFound    = errors.New("forward: no such service")
	ErrUnavailable = errors.New("forward: service unavailable")
)

func replyFor(err error) Reply {
	switch {
	case err == nil:
		return Reply{Code: ReplyOK}
	case errors.Is(err, ErrRefused):
		return Reply{Code: ReplyRefused, Reason: err.Error()}
	case errors.Is(err, ErrNotFound):
		return Reply{Code: ReplyNotFound, Reason: err.Error()}
	default:
		return Reply{Code: ReplyUnavailable, Reason: err.Error()}
	}
}
