package trust

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// RFQGate is the edge check every node applies to an RFQ on a gossip
// topic, before anything else sees it: decoded within its size limit,
// signed by its gossip signer, dated as an honest relay could forward it
// (rfq_timeliness.go), not seen before on this topic (one RFQ may be
// published on several shards; each copy is checked once), and within its
// renter's RFQ rate (rfq_rate.go).
type RFQGate struct {
	seen *auction.SeenCache
	rate *renterRate
	now  func() time.Time
}

// NewRFQGate returns a gate remembering 100,000 RFQs and 10,000 renters.
func NewRFQGate(now func() time.Time) *RFQGate {
	if now == nil {
		now = time.Now
	}
	return &RFQGate{seen: auction.NewSeenCache(100_000), rate: newRenterRate(rfqRatePerSec, rfqRateBurst, rfqRateRenter), now: now}
}

// Check is the gate's verdict on an RFQ published on topic, and the RFQ
// when it passes.
func (g *RFQGate) Check(topic string, signer peer.ID, data []byte) (*auction.RFQ, p2p.Verdict) {
	rfq, author, err := auction.OpenRFQ(data)
	if attest.FromOtherVersion(err) {
		return nil, p2p.Skip
	}
	if err != nil || author != signer {
		return nil, p2p.Reject
	}
	now := g.now()
	if v := rfqTimeliness(rfq, now); v != p2p.Accept {
		return nil, v
	}
	if g.seen.Seen(topic+" "+attest.RecordID(data).String(), rfq.ExpiresAtMs, now) {
		return nil, p2p.Ignore // a replay
	}
	if !g.rate.allow(rfq.Renter, now) {
		return nil, p2p.Ignore // over the renter's RFQ rate
	}
	return rfq, p2p.Accept
}

// Validator is the gate as the validator of one topic.
func (g *RFQGate) Validator(topic string) p2p.Validator {
	return func(_ context.Context, _, signer peer.ID, data []byte) p2p.Verdict {
		_, v := g.Check(topic, signer, data)
		return v
	}
}
