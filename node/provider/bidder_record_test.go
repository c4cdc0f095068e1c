package provider

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestBidderTakesTheRFQItsValidatorOpened: the bidder answers the RFQ the
// topic's validator opened and handed on (p2p.Message.Record) without
// checking its signature again; a message that comes without one is
// opened, and checked, here.
func TestBidderTakesTheRFQItsValidatorOpened(t *testing.T) {
	r := newRoom(t, 1)
	ctx := context.Background()
	spoil := func(raw []byte) []byte {
		out := bytes.Clone(raw)
		out[len(out)-1] ^= 1 // the envelope's signature ends it
		if _, _, err := auction.OpenRFQ(out); err == nil {
			t.Fatal("the spoiled RFQ still opens")
		}
		return out
	}

	raw, rfq := r.rfq(t, 1, auction.TierSilver)
	r.p.HandleRFQ(ctx, p2p.Message{Topic: p2p.TopicRFQ, Data: spoil(raw), Record: rfq})
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids on the RFQ its validator handed on, want 1: the bidder opened the message again", n)
	}

	r.prov.Clock.Advance(r.p.bidder.policy.BidValidity * 2) // the first bid's hold ends
	raw, _ = r.rfq(t, 1, auction.TierSilver)
	r.p.HandleRFQ(ctx, p2p.Message{Topic: p2p.TopicRFQ, Data: spoil(raw)})
	if n := len(r.takeBids(t)); n != 0 {
		t.Fatalf("%d bids on a spoiled RFQ with no record, want none", n)
	}
	r.send(raw)
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids on a sound RFQ with no record, want 1", n)
	}
}

// TestRFQHeardTwiceIsDecidedOnce: an RFQ reaching the provider on two
// topics (two of its shards, or its shard's topic and its lot's) draws one
// bid; another RFQ draws its own.
func TestRFQHeardTwiceIsDecidedOnce(t *testing.T) {
	r := newRoom(t, 2)
	ctx := context.Background()
	raw, rfq := r.rfq(t, 1, auction.TierSilver)
	shard := r.p.Shards()[0]
	r.p.HandleRFQ(ctx, p2p.Message{Topic: shard.RFQTopic(), Data: raw, Record: rfq})
	r.p.HandleRFQ(ctx, p2p.Message{Topic: auction.LotTopic(shard.RFQTopic(), 0, 2), Data: raw, Record: rfq})
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids on one RFQ heard on two topics, want 1", n)
	}
	other, _ := r.rfq(t, 1, auction.TierSilver)
	r.send(other)
	if n := len(r.takeBids(t)); n != 1 {
		t.Fatalf("%d bids on another RFQ, want 1", n)
	}
	var h rfqsHeard
	now := time.Unix(1_800_000_000, 0)
	for i := range maxRFQsHeard + 10 {
		h.first(fmt.Sprint(i), now, now.Add(time.Hour))
	}
	if len(h.until) > maxRFQsHeard {
		t.Fatalf("%d RFQs remembered, bound %d", len(h.until), maxRFQsHeard)
	}
	if !h.first("late", now.Add(rfqHeardFor+time.Second), now) || h.first("late", now.Add(rfqHeardFor+2*time.Second), now) {
		t.Fatal("an RFQ is not remembered once, then recognised")
	}
}
