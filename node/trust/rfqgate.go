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
// published on several shards; each copy is checked once), and within the
// RFQ rates of its renter, the forwarding peer and its network
// (rfq_rate.go).
type RFQGate struct {
	seen     *auction.SeenCache
	limits   *rfqLimits
	now      func() time.Time
	subnet   func(peer.ID) string
	renowned func(renter string) bool
	dropped  func(reason string)
	// late is each forwarding peer's allowance of RFQs expired in transit
	// passed on uncharged (lateRFQsBurst).
	late *budgets
}

// RFQs expired in transit. An RFQ lives its bid window and
// auction.RFQExpiryMargin (10 s) more, and gossip on a busy network can
// take longer: at 200 nodes on two cores every charge between honest
// nodes in a run was an RFQ that expired on its way (35 in one run,
// docs/benchmarks.md). So each forwarding peer may pass on lateRFQsBurst
// of them uncharged, one more every 1/lateRFQsRate seconds, as with late
// digests (digests.go); past that each costs the ignore point again, which
// bounds the signature checks a replayer of a renowned renter's expired
// RFQs (not held to the forwarder's budget) gets for free.
const (
	lateRFQsBurst = 16
	lateRFQsRate  = 0.1
)

// RFQGateDeps are the gate's collaborators.
type RFQGateDeps struct {
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Subnet names the network a forwarding peer connects from (its /24);
	// nil: every peer is its own network.
	Subnet func(peer.ID) string
	// Renowned reports whether a renter holds receipts from providers this
	// node has evidence of; nil: no renter does.
	Renowned func(renter string) bool
	// Dropped is told why each RFQ that did not pass was dropped (the
	// rfqDrop reasons); nil: nobody.
	Dropped func(reason string)
}

// Why the gate drops an RFQ, the label values of
// idlegrid_trust_rfqs_dropped_total, with the auction.Timeliness classes
// past their time (expired, stale, future).
const (
	rfqDropBudget    = "forwarder_budget" // over its forwarder's or network's rate, cut at entry uncharged
	rfqDropVersion   = "other_version"    // a later release's, skipped
	rfqDropMalformed = "malformed"        // undecodable, badly signed, or signed by another key
	rfqDropReplay    = "replay"           // seen on this topic before
	rfqDropRenter    = "renter_rate"      // over its renter's rate
)

// NewRFQGate returns a gate remembering 100,000 RFQs and 10,000 keys of
// each rate.
func NewRFQGate(deps RFQGateDeps) *RFQGate {
	g := &RFQGate{seen: auction.NewSeenCache(100_000), limits: newRFQLimits(), now: deps.Now, subnet: deps.Subnet, renowned: deps.Renowned, dropped: deps.Dropped,
		late: newBudgets(lateRFQsRate, lateRFQsBurst, newPeersKeys)}
	if g.now == nil {
		g.now = time.Now
	}
	if g.subnet == nil {
		g.subnet = func(p peer.ID) string { return "peer:" + p.String() }
	}
	if g.renowned == nil {
		g.renowned = func(string) bool { return false }
	}
	if g.dropped == nil {
		g.dropped = func(string) {}
	}
	return g
}

// Entry is the gate's entry check (p2p.EntryCheck) of an RFQ that from
// forwarded: a fresh renter's RFQ spends the budgets of its forwarder and
// of the forwarder's network (rfq_rate.go), and over them it is cut
// before gossipsub remembers it, so the renter's own copy, or an honest
// relay's, is still taken when it arrives (p2p/gossip_entry.go). A
// renowned renter's RFQ passes. The renter is the record's key, not yet
// checked: a false claim is rejected by Check and costs its forwarder.
// Keys of a type idlegrid nodes do not use name no renter, and their
// RFQs are budgeted as a fresh renter's.
func (g *RFQGate) Entry(from peer.ID, data []byte) bool {
	if claimed, _ := attest.ClaimedSigner(data); claimed != "" && g.renowned(claimed.String()) {
		return true
	}
	if g.limits.entry(from, g.subnet(from), g.now()) {
		return true
	}
	g.dropped(rfqDropBudget)
	return false
}

// Check is the gate's verdict on an RFQ published on topic that from
// forwarded, once it passed Entry, and the RFQ when it passes. The gossip
// signer is the renter (the router checked its signature; a record signed
// by another is rejected); an unsigned message (a later release's,
// p2p.Validator) names the renter by its record's key, checked when the
// record is opened.
func (g *RFQGate) Check(topic string, from, signer peer.ID, data []byte) (*auction.RFQ, p2p.Verdict) {
	now := g.now()
	rfq, author, err := auction.OpenRFQ(data)
	if attest.FromOtherVersion(err) {
		return g.drop(rfqDropVersion, p2p.Skip)
	}
	if err != nil || !gossipSignedBy(author, signer) {
		return g.drop(rfqDropMalformed, p2p.Reject)
	}
	switch tl := rfq.Timeliness(now, MaxClockSkew, rfqSeenTTL); {
	case tl == auction.RFQExpired && g.late.take(now, string(from)):
		return g.drop(tl.String(), p2p.Withhold)
	case tl != auction.RFQTimely:
		return g.drop(tl.String(), timelinessVerdict(tl))
	}
	if g.seen.Seen(topic+" "+attest.RecordID(data).String(), rfq.ExpiresAtMs, now) {
		return g.drop(rfqDropReplay, p2p.Ignore)
	}
	if !g.limits.renter(rfq.Renter, g.renowned(rfq.Renter), now) {
		return g.drop(rfqDropRenter, p2p.Ignore)
	}
	return rfq, p2p.Accept
}

// drop counts an RFQ dropped for reason and returns verdict.
func (g *RFQGate) drop(reason string, verdict p2p.Verdict) (*auction.RFQ, p2p.Verdict) {
	g.dropped(reason)
	return nil, verdict
}

// Validator is the gate as the validator of one topic; it hands on the
// RFQ it accepts.
func (g *RFQGate) Validator(topic string) p2p.RecordValidator {
	return func(_ context.Context, from, signer peer.ID, data []byte) (p2p.Verdict, any) {
		rfq, v := g.Check(topic, from, signer, data)
		if v != p2p.Accept {
			return v, nil
		}
		return v, rfq
	}
}
