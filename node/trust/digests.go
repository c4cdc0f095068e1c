package trust

import (
	"bytes"
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/p2p"
)

// The market view is the book of providers' signed capacity digests:
// gossiped on each shard's digest topic when a provider's capacity
// changes, and synced from a few peers when this node joins (sync.go).
// `market search`, the renter's expected bidders and a provider's bid
// decision read it; the DHT stays for one provider's full record.

// ValidateDigest admits a digest on its shard's digest topic: signed by
// its gossip author, current, and about a provider that serves the shard.
func (t *Trust) ValidateDigest(topic string) p2p.Validator {
	st, err := auction.ParseShardTopic(topic)
	return func(_ context.Context, _, signer peer.ID, data []byte) p2p.Verdict {
		if err != nil || st.Kind != auction.ShardTopicDigest {
			return p2p.Reject
		}
		d, author, err := auction.OpenDigest(data)
		if attest.FromOtherVersion(err) {
			return p2p.Skip
		}
		if err != nil || author != signer || !d.OnShard(st.Shard) {
			return p2p.Reject
		}
		if err := d.CheckTime(t.now()); err != nil {
			return p2p.Ignore // stale or early: a clock problem, not forgery
		}
		if old, oldRaw, ok := t.digests.Get(d.Peer); ok && !d.Supersedes(old) {
			if bytes.Equal(oldRaw, data) {
				return p2p.Accept // the one we hold (synced before it was gossiped to us)
			}
			return p2p.Ignore // an older digest
		}
		return p2p.Accept
	}
}

// OnDigest adds a validated digest to the book.
func (t *Trust) OnDigest(raw []byte) {
	t.addDigest(raw)
}

// addDigest adds a verified digest to the book and notes what it teaches:
// a shard not seen before, a provider new to its shards.
func (t *Trust) addDigest(raw []byte) bool {
	d, _, err := auction.OpenDigest(raw)
	if err != nil {
		return false
	}
	_, _, known := t.digests.Get(d.Peer)
	added, err := t.digests.Add(raw, t.now())
	if err != nil {
		t.log.Debug("digest not kept", "err", err)
		return false
	}
	if !known {
		t.shardsMu.Lock()
		for _, s := range d.Shards() {
			t.grewAt[s] = t.now()
		}
		t.shardsMu.Unlock()
	}
	t.noteShards(raw)
	return added
}

// settleFor is how long after a shard's view last gained a provider the
// renter still treats it as incomplete: while a node is still learning
// its shards it must not close a bid window early on the providers it
// happens to know (a cheaper one may be missing from its view).
const settleFor = 10 * time.Second

// settled reports whether the view of shard s stopped growing.
func (t *Trust) settled(s auction.Shard) bool {
	t.shardsMu.Lock()
	defer t.shardsMu.Unlock()
	at, ok := t.grewAt[s]
	return ok && t.now().Sub(at) >= settleFor
}

// noteShards tells the node of shards it had not seen a digest of, so a
// renter can follow their digest topics.
func (t *Trust) noteShards(raw []byte) {
	if t.onShard == nil {
		return
	}
	d, _, err := auction.OpenDigest(raw)
	if err != nil {
		return
	}
	for _, s := range d.Shards() {
		t.shardsMu.Lock()
		fresh := !t.shards[s]
		t.shards[s] = true
		t.shardsMu.Unlock()
		if fresh {
			t.onShard(s)
		}
	}
}

// Digests is the book's current view of one shard ("" for all).
func (t *Trust) Digests(s auction.Shard) []*auction.Digest { return t.digests.Digests(s, t.now()) }

// ShardsFor lists the shards an RFQ should be published on, cheapest
// matching shard first.
func (t *Trust) ShardsFor(r *auction.RFQ) []auction.Shard { return t.digests.ShardsFor(r, t.now()) }

// ExpectedBidders are the providers that, by the shared selection rule,
// will bid on an RFQ published on shards: the renter closes the bid window
// once all of them answered. It is nil while a shard's view is still
// growing (settled), so the window runs its full length.
func (t *Trust) ExpectedBidders(r *auction.RFQ, rfqID string, shards []auction.Shard) map[string]bool {
	out := map[string]bool{}
	for _, s := range shards {
		if !t.settled(s) {
			return nil // not known yet: the window runs its full length
		}
		sel := auction.SelectBidders(auction.BidSelectInput{RFQ: r, RFQID: rfqID, Shard: s, Digests: t.Digests(s)})
		for _, p := range sel.Always {
			out[p] = true
		}
		for _, p := range sel.Sampled {
			out[p] = true
		}
	}
	delete(out, t.self.String())
	return out
}

// digestOffers is the market view as search offers; ok is false while the
// book is empty (before the first digest arrives or a sync completes).
func (t *Trust) digestOffers() (offers []query.Offer, ok bool) {
	caps := t.digests.Capacities(t.now())
	if len(caps) == 0 {
		return nil, false
	}
	for _, c := range caps {
		offers = append(offers, query.Offer{Capacity: c, Reliability: t.cfg.ReliabilityPrior})
	}
	return offers, true
}

// pruneDigests drops expired digests now and then.
func (t *Trust) pruneDigests(ctx context.Context) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.digests.Prune(t.now())
		}
	}
}
