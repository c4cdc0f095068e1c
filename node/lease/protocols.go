package lease

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/idlegrid/idlegrid/p2p"
)

// Request/response protocols of the auction. Each exchange is one
// varint-framed request and one framed response on a fresh stream
// (p2p.HandleRequests), with size limits and deadlines per protocol.
const (
	// BidProto carries a sealed Bid from provider to renter; the response
	// is Ack, and a refused bid resets the stream.
	BidProto protocol.ID = "/idlegrid/bid/1.0.0"
	// LeaseProto carries a sealed Award from renter to provider; the
	// response is a tagged sealed LeaseAcceptance or Decline.
	LeaseProto protocol.ID = "/idlegrid/lease/1.0.0"
	// PreemptProto carries a sealed PreemptNotice from provider to renter;
	// the response is Ack, and a refused notice resets the stream.
	PreemptProto protocol.ID = "/idlegrid/preempt/1.0.0"
)

// Response tags of LeaseProto.
const (
	TagAccept  byte = 'A'
	TagDecline byte = 'D'
)

// Ack is the response to a bid or a preemption notice that was taken.
var Ack = []byte{0}

// Malformed marks err as caused by a request no honest peer sends (it does
// not decode, or its signer is not its sender), so that the p2p layer
// charges the sender for it.
func Malformed(err error) error { return fmt.Errorf("%w: %w", p2p.ErrMalformed, err) }

// requestHeader is how long a serving side waits for a whole request on
// the auction's protocols: each request is a few KiB written at once right
// after the stream opens, so an honest peer sends it within milliseconds;
// seconds leave room for a loaded machine. Idle and slowloris streams are
// cut then, and charged to their sender.
const requestHeader = 5 * time.Second

// Limits of each request/response protocol. MaxPerPeer bounds what one
// peer may hold open at once: a provider bids on each of a renter's RFQs
// (a renter posting dozens of jobs at once gets dozens of bids from each
// provider), a renter awards one lease per job, and preemption notices
// come one per lease; MaxConcurrent keeps the default (256).
//
// Bids and notices are small and may ride a relay that limits circuits
// (OverLimitedRelay), so a NATed provider's bid reaches a NATed renter
// even before hole punching connects them. An award may not: a lease
// moves specs, results and tunnels, so the award waits for a direct
// connection (or an unlimited relay) and fails, with p2p's reason, when
// none comes; the renter then offers the next bid.
var (
	BidLimits = p2p.StreamLimits{MaxRequest: 16 << 10, MaxResponse: 1 << 10, Timeout: 5 * time.Second,
		HeaderTimeout: requestHeader, MaxPerPeer: 64, OverLimitedRelay: true}
	LeaseLimits = p2p.StreamLimits{MaxRequest: 16 << 10, MaxResponse: 16 << 10, Timeout: 5 * time.Second,
		HeaderTimeout: requestHeader, MaxPerPeer: 64}
	PreemptLimits = p2p.StreamLimits{MaxRequest: 2 << 10, MaxResponse: 1 << 10, Timeout: 5 * time.Second,
		HeaderTimeout: requestHeader, MaxPerPeer: 16, OverLimitedRelay: true}
)

// MaxModuleBytes caps a WASM module a renter serves and a provider
// fetches.
const MaxModuleBytes = 64 << 20
