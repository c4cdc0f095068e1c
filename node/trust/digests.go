package trust

import (
	"bytes"
	"context"
	"slices"
	"strings"
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
// `market search`, the renter's shards and expected bidders and a
// provider's bid decision read it, each only as far as the evidence of a
// digest's provider goes (evidence.go); the DHT keeps each provider's full
// record, which backs its digests.

// New-peer budgets. A source (the peer that gossiped or served a digest,
// and that peer's network) may put at most so many providers this node
// has not checked into its book; a token is given back when the
// provider's record backs its digest, so a source of real providers never
// runs dry and one of fresh keys does. At most maxHeldDigests digests wait
// for their check at once.
const (
	newPeersPerSource   = 64
	newPeersSourceRate  = 0.2
	newPeersPerNetwork  = 128
	newPeersNetworkRate = 0.4
	newPeersKeys        = 4096
	maxHeldDigests      = 2048
)

// Late digests. An older digest than the one held, issued more than
// auction.DigestCrossing before it, is nothing a relay keeping up passes
// on, but a relay minutes behind does: at 200 nodes on two cores gossip
// ran minutes late, and honest relays were charged 9 to 60 such digests
// in a run. So each peer may pass on lateDigestsBurst of them uncharged,
// one more every 1/lateDigestsRate seconds; past that each is charged
// as a replay. A replayer gets that many signature checks for free, and
// no more.
const (
	lateDigestsBurst = 16
	lateDigestsRate  = 0.1
)

// newPeerBudget is the sources' and their networks' budgets.
type newPeerBudget struct{ source, network *budgets }

func newNewPeerBudget() *newPeerBudget {
	return &newPeerBudget{
		source:  newBudgets(newPeersSourceRate, newPeersPerSource, newPeersKeys),
		network: newBudgets(newPeersNetworkRate, newPeersPerNetwork, newPeersKeys),
	}
}

// take spends a token of src and of its network; it returns the keys to
// give back later.
func (b *newPeerBudget) take(now time.Time, src peer.ID, subnet string) ([]string, bool) {
	sk, nk := "peer:"+string(src), "net:"+subnet
	if !b.source.take(now, sk) {
		return nil, false
	}
	if !b.network.take(now, nk) {
		b.source.give(now, sk)
		return nil, false
	}
	return []string{sk, nk}, true
}

// has reports whether src and its network each have a token left.
func (b *newPeerBudget) has(now time.Time, src peer.ID, subnet string) bool {
	return b.source.has(now, "peer:"+string(src)) && b.network.has(now, "net:"+subnet)
}

// give gives back the tokens of keys.
func (b *newPeerBudget) give(now time.Time, keys ...string) {
	for _, k := range keys {
		if strings.HasPrefix(k, "net:") {
			b.network.give(now, k)
		} else {
			b.source.give(now, k)
		}
	}
}

// admission is what became of a digest offered to the book.
type admission int

const (
	admitBacked   admission = iota // kept; its provider is backed
	admitHeld                      // kept, held until its record is checked
	admitStale                     // older than the one held, or dropped
	admitCrossed                   // older than the one held, but sent with it (auction.Digest.CrossedInFlight)
	admitUnbacked                  // its provider's record did not back it lately
	admitRefused                   // a new provider over its source's budget
	// admitBlocked: its provider is blocked here (proven to cheat, or
	// banned): not kept, and withheld uncharged, since the peer that
	// passed it on may not know.
	admitBlocked
)

// ValidateDigest admits a digest on its shard's digest topic: signed by
// its gossip author, current, and about a provider that serves the shard.
// A digest of a backed provider is accepted and passed on; one of a
// provider this node has not checked yet is kept, withheld (no honest
// relay passes on what it has not checked) and its record is fetched, as
// is one whose record did not back it lately; one of a provider blocked
// here is dropped and withheld, as is one older than the provider's
// digest held here but published with it (a relay on a slower path:
// gossip does not keep order) or within its forwarder's allowance of
// late ones; a new provider over its forwarder's budget, or a digest
// older than that, is ignored (charged). Honest nodes charged
// each other for the crossed ones: 40 charges in one 100-node
// BenchmarkAuction run whose formation was slow.
func (t *Trust) ValidateDigest(topic string) p2p.Validator {
	st, err := auction.ParseShardTopic(topic)
	return func(_ context.Context, from, signer peer.ID, data []byte) p2p.Verdict {
		if err != nil || st.Kind != auction.ShardTopicDigest {
			return p2p.Reject
		}
		d, author, err := t.digests.Open(data)
		if attest.FromOtherVersion(err) {
			return p2p.Skip
		}
		if err == nil && gossipSignedBy(author, signer) && d.FormerlyOnShard(st.Shard) {
			return p2p.Ignore // an earlier release's shard rule (auction.Digest.FormerlyOnShard)
		}
		if err != nil || !gossipSignedBy(author, signer) || !d.OnTopic(st) {
			return p2p.Reject
		}
		if err := d.CheckTime(t.now()); err != nil {
			return p2p.Ignore // stale or early: a clock problem, not forgery
		}
		switch t.admit(d, data, from) {
		case admitBacked:
			return p2p.Accept
		case admitHeld, admitUnbacked, admitBlocked, admitCrossed:
			return p2p.Withhold
		default:
			return p2p.Ignore
		}
	}
}

// admit offers a verified, current digest that src gossiped or served to
// the book.
func (t *Trust) admit(d *auction.Digest, raw []byte, src peer.ID) admission {
	a := t.admitToBook(d, raw, src)
	if a == admitBacked {
		t.noteLots(d)
	}
	return a
}

// admitToBook is admit's rule.
func (t *Trust) admitToBook(d *auction.Digest, raw []byte, src peer.ID) admission {
	now := t.now()
	if d.Peer == t.selfStr {
		if _, err := t.digests.Add(raw, now); err != nil {
			return admitStale
		}
		return admitBacked
	}
	if id, err := peer.Decode(d.Peer); err == nil && t.p2p.Blocked(id) {
		// A cheat's digest, passed on by a peer that has not heard the
		// proof, would otherwise stand in the book and in the always-bid
		// prefix of this node's views.
		t.digests.Remove(d.Peer)
		if src != "" && src != id {
			t.sightBlocked(d.Peer) // the peer that passed it on has not heard the proof
		}
		return admitBlocked
	}
	if old, oldRaw, ok := t.digests.Get(d.Peer); ok {
		if !d.Supersedes(old) && !bytes.Equal(oldRaw, raw) {
			if d.CrossedInFlight(old) || src != "" && t.lateDigests.take(now, string(src)) {
				return admitCrossed
			}
			return admitStale // an older digest
		}
		if _, err := t.digests.Add(raw, now); err != nil {
			return admitStale
		}
		ev := t.ev.of(d.Peer)
		switch {
		case ev.Backed(now):
			if d.CapSeq > ev.capSeq && !servesAll(ev.serves, d.Shards()) && now.Sub(ev.checkedAt) >= recheckEvery {
				t.ev.update(d.Peer, now, func(ev *peerEvidence) { ev.via = src })
				t.queueCheck(d.Peer)
			}
			return admitBacked
		case !ev.checking:
			t.queueCheck(d.Peer) // held with a full queue, or its record lapsed
		}
		return admitHeld
	}
	ev := t.ev.of(d.Peer)
	switch {
	case now.Before(ev.unbackedUntil):
		return admitUnbacked
	case ev.Backed(now): // its last digest expired; the record still backs it
		if _, err := t.digests.Add(raw, now); err != nil {
			return admitStale
		}
		return admitBacked
	case t.ev.heldCount() >= maxHeldDigests:
		return admitRefused
	}
	keys, ok := t.newPeers.take(now, src, t.p2p.Subnet(src))
	if !ok {
		return admitRefused
	}
	if _, err := t.digests.Add(raw, now); err != nil {
		t.newPeers.give(now, keys...)
		return admitStale
	}
	t.ev.update(d.Peer, now, func(ev *peerEvidence) {
		ev.held, ev.sources, ev.blame, ev.tries = true, keys, src, 0
	})
	t.queueCheck(d.Peer)
	return admitHeld
}

// servesAll reports whether every shard of claimed is in serves. A backed
// provider's newer digest is checked against its newer record only when
// it claims a shard the matched record does not serve: a provider's
// record is put again at every change of its GPUs (a hold, a lease, a
// release), and re-checking each of those at every node cost as many
// checks a minute as there are providers times nodes (docs/benchmarks.md,
// "Records served by peers"); the matched record is checked again before
// it expires either way.
func servesAll(serves, claimed []auction.Shard) bool {
	for _, s := range claimed {
		if !slices.Contains(serves, s) {
			return false
		}
	}
	return true
}

// learnt notes what a newly backed provider teaches: its shards' views
// grew, and a shard not seen before may be one a renter should follow.
func (t *Trust) learnt(d *auction.Digest) {
	now := t.now()
	t.shardsMu.Lock()
	var fresh []auction.Shard
	for _, s := range d.Shards() {
		t.grewAt[s] = now
		if !t.shards[s] {
			t.shards[s] = true
			fresh = append(fresh, s)
		}
	}
	t.shardsMu.Unlock()
	if t.onShard != nil {
		for _, s := range fresh {
			t.onShard(s)
		}
	}
	t.noteLots(d)
}

// settleFor is how long after a shard's view last gained a provider the
// renter still treats it as incomplete: while a node is still learning
// its shards it must not close a bid window early on the providers it
// happens to know (a cheaper one may be missing from its view). Only
// backed providers count: held digests of fresh keys do not keep a view
// unsettled.
const settleFor = 10 * time.Second

// settled reports whether the view of shard s stopped growing.
func (t *Trust) settled(s auction.Shard) bool {
	t.shardsMu.Lock()
	defer t.shardsMu.Unlock()
	at, ok := t.grewAt[s]
	return ok && t.now().Sub(at) >= settleFor
}

// Digests is the bid-selection view of one shard ("" for all): the
// proven providers' digests (and this node's own). A provider's bidder
// decides over it with its own digest added, and the scarcity signal
// reads it.
func (t *Trust) Digests(s auction.Shard) []*auction.Digest {
	now := t.now()
	all := t.digests.Digests(s, now)
	out := all[:0]
	for _, d := range all {
		if d.Peer == t.selfStr {
			out = append(out, d)
			continue
		}
		if ev := t.evidence(d.Peer, false); ev.Proven(now) && !ev.Silent(now) {
			out = append(out, d)
		}
	}
	return out
}

// ShardsFor lists the shards an RFQ should be published on
// (auction.ChooseShards over the backed providers' digests).
func (t *Trust) ShardsFor(r *auction.RFQ) []auction.Shard {
	now := t.now()
	var offers []auction.ShardOffer
	for _, d := range t.digests.Digests("", now) {
		if ev := t.evidence(d.Peer, false); ev.Backed(now) {
			offers = append(offers, auction.ShardOffer{Digest: d, Proven: ev.Proven(now) && !ev.Silent(now)})
		}
	}
	return auction.ChooseShards(r, offers, t.heardOn, now)
}

// RFQTopics are the topics an RFQ for shards goes to: each shard's own,
// or, once every backed provider of a shard names lots for it, the lots
// with its cheapest proven offers (auction.RFQTopicsOn; silent providers
// count as unproven). An RFQ asking everyone (auction.EveryoneBids) goes
// to every lot the renter follows that holds a backed provider, and to
// the shard's own topic while one names no lots (auction.EveryoneTopicsOn).
func (t *Trust) RFQTopics(r *auction.RFQ, shards []auction.Shard, everyone bool) []auction.ShardTopic {
	now := t.now()
	var out []auction.ShardTopic
	for _, s := range shards {
		var offers []auction.ShardOffer
		for _, d := range t.digests.Digests(s, now) {
			if ev := t.evidence(d.Peer, false); ev.Backed(now) && d.Peer != t.selfStr {
				offers = append(offers, auction.ShardOffer{Digest: d, Proven: ev.Proven(now) && !ev.Silent(now)})
			}
		}
		if everyone {
			out = append(out, auction.EveryoneTopicsOn(r.Renter, s, offers)...)
			continue
		}
		out = append(out, auction.RFQTopicsOn(r, s, offers, now)...)
	}
	return out
}

// ExpectedBidders are the providers that, by the shared selection rule,
// will bid on an RFQ published on topics: on each, the proven providers
// the rule selects among the topic's members (a lot's, or the whole
// shard's), and the backed newcomers whose own view selects them; silent
// ones are left out. The renter closes the bid window once all of them
// answered; each that does not answers for a miss (expect.go). It is nil
// while a shard's view is still growing (settled), so the window runs its
// full length.
func (t *Trust) ExpectedBidders(r *auction.RFQ, rfqID string, topics []auction.ShardTopic) map[string]bool {
	now := t.now()
	out := map[string]bool{}
	for _, st := range topics {
		s := st.Shard
		if !t.settled(s) {
			return nil // not known yet: the window runs its full length
		}
		in := auction.BidSelectInput{RFQ: r, RFQID: rfqID, Shard: s, Now: now}
		for _, d := range t.digests.Digests(s, now) {
			ev := t.evidence(d.Peer, false)
			switch {
			case d.Peer == t.selfStr || !ev.Backed(now) || ev.Silent(now) || !d.MemberOf(st):
			case ev.Proven(now):
				in.Digests = append(in.Digests, d)
			default:
				in.Newcomers = append(in.Newcomers, d)
			}
		}
		sel := auction.SelectBidders(in)
		for _, ps := range [][]string{sel.Always, sel.Sampled, sel.Newcomers} {
			for _, p := range ps {
				out[p] = true
			}
		}
	}
	window := time.Duration(r.BidWindowMs) * time.Millisecond
	t.expect.expect(rfqID, out, now.Add(window+expectGrace))
	return out
}

// digestOffers is the market view as search offers: the backed
// providers, and how many digests are held unchecked; ok is false while
// no provider is backed yet (before the first digest is checked).
func (t *Trust) digestOffers() (offers []query.Offer, held int, ok bool) {
	now := t.now()
	for _, d := range t.digests.Digests("", now) {
		if !t.backed(d, now) {
			held++
			continue
		}
		offers = append(offers, query.Offer{Capacity: d.Capacity(), Reliability: t.cfg.ReliabilityPrior})
	}
	return offers, held, len(offers) > 0
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
			t.market.prune(t.now())
			t.recheckRecords()
		}
	}
}
