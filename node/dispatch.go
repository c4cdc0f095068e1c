package node

import (
	"context"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// maxConcurrentRFQs bounds the RFQs a provider evaluates at once; beyond
// it, RFQs wait for a slot (the subscription buffer absorbs bursts).
const maxConcurrentRFQs = 64

// summaryRetention is how long award summaries are kept for the price
// index.
const summaryRetention = 7 * 24 * time.Hour

// onGossip returns the handler of validated messages on a topic.
func (n *Node) onGossip(ctx context.Context, topic string) func(p2p.Message) {
	slots := make(chan struct{}, maxConcurrentRFQs)
	return func(m p2p.Message) {
		n.gossip.add(m)
		switch topic {
		case p2p.TopicRFQ:
			if n.bidder == nil {
				return
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				defer func() { <-slots }()
				n.bidder.onRFQ(ctx, m)
			}()
		case p2p.TopicAttest:
			n.onAttest(ctx, m.Data)
		case p2p.TopicFraud:
			n.applyFraud(m.Data)
		}
	}
}

// storeSummary keeps a validated award summary for the price index.
func (n *Node) storeSummary(raw []byte) *auction.AwardSummary {
	sum, _, err := auction.OpenAwardSummary(raw)
	if err != nil {
		return nil
	}
	expires := time.UnixMilli(sum.AtMs).Add(summaryRetention)
	if err := n.db.PutSummary(attest.RecordID(raw).String(), raw, expires); err != nil {
		n.log.Warn("store award summary", "err", err)
	}
	return sum
}
