package trust

import (
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// rfqSeenTTL is how long the gossip router remembers a message ID:
// gossipsub's TimeCacheDuration, which the p2p layer leaves at its
// default. An honest relay may serve an RFQ from that cache up to this
// long after it was first seen (docs/protocol.md §3.1).
const rfqSeenTTL = 120 * time.Second

// timelinessVerdict is the RFQ validator's verdict on an RFQ's dates, as
// classed by auction.RFQ.Timeliness with MaxClockSkew and rfqSeenTTL
// (docs/protocol.md, RFQ shard validation): a timely RFQ passes on to the
// other checks; one expired recently enough that an honest relay may
// still forward it is ignored; one long expired, or dated beyond the
// allowed clock skew ahead, is something no honest relay produces and is
// rejected, which costs the forwarding peer (p2p charges rejects more
// than ignores, and gossipsub counts them as invalid deliveries).
func timelinessVerdict(t auction.Timeliness) p2p.Verdict {
	switch t {
	case auction.RFQTimely:
		return p2p.Accept
	case auction.RFQExpired:
		return p2p.Ignore
	default: // RFQStale, RFQFuture
		return p2p.Reject
	}
}
