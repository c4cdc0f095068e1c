package node

import (
	"time"

	"github.com/idlegrid/idlegrid/p2p"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Request/response protocols of the auction. Each exchange is one
// varint-framed request and one framed response on a fresh stream
// (p2p.HandleRequests), with size limits and deadlines per protocol.
const (
	// BidProto carries a sealed Bid from provider to renter; the response
	// is bidAck, and a refused bid resets the stream.
	BidProto protocol.ID = "/idlegrid/bid/1.0.0"
	// LeaseProto carries a sealed Award from renter to provider; the
	// response is a tagged sealed LeaseAcceptance or Decline.
	LeaseProto protocol.ID = "/idlegrid/lease/1.0.0"
	// PreemptProto carries a sealed PreemptNotice from provider to renter;
	// the response is bidAck, and a refused notice resets the stream.
	PreemptProto protocol.ID = "/idlegrid/preempt/1.0.0"
)

// Response tags of LeaseProto.
const (
	tagAccept  byte = 'A'
	tagDecline byte = 'D'
)

var bidAck = []byte{0}

var (
	bidLimits     = p2p.StreamLimits{MaxRequest: 16 << 10, MaxResponse: 1 << 10, Timeout: 5 * time.Second}
	leaseLimits   = p2p.StreamLimits{MaxRequest: 16 << 10, MaxResponse: 16 << 10, Timeout: 5 * time.Second}
	preemptLimits = p2p.StreamLimits{MaxRequest: 2 << 10, MaxResponse: 1 << 10, Timeout: 5 * time.Second}
)
