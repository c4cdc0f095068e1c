package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Bounded bidding (issue 12) in the replay: providers gossip capacity
// digests on their shards (auction.NewDigest, re-issued when their free
// GPUs change and at least every digestRefresh), and on an RFQ each
// provider bids only if auction's coordinator-free rule picks it, over
// its shard's digests. The renter publishes on the shards that hold a
// fitting digest (cheapest first, as DigestBook.ShardsFor), asks each for
// ceil(WantBids / shards) bids and matches on the bids it got.

// digestRefresh is the digest re-gossip timer (the record republish timer).
const digestRefresh = 10 * 60

type digestEntry struct {
	d    *auction.Digest
	free int
	at   int64
	seq  uint64
}

// bidView is the market's shard view: one current digest per provider.
type bidView struct {
	peerOf  []string          // provider index -> digest peer ID
	byPeer  map[string]int    // digest peer ID -> provider index
	entries []digestEntry     // by provider index
	shardOf [][]auction.Shard // provider index -> its shards
	shards  map[auction.Shard][]int
	// phantoms are Config.Phantoms' providers by shard (phantom.go), and
	// phantomOf the same by peer ID.
	phantoms  map[auction.Shard][]*phantom
	phantomOf map[string]*phantom
}

func newBidView(w *World) (*bidView, error) {
	v := &bidView{byPeer: map[string]int{}, shards: map[auction.Shard][]int{}}
	for i, p := range w.provs {
		id, err := simPeerID(w.seed, i)
		if err != nil {
			return nil, err
		}
		v.peerOf = append(v.peerOf, id)
		v.byPeer[id] = i
		sh := auction.ProviderShards(p.cap)
		v.shardOf = append(v.shardOf, sh)
		for _, s := range sh {
			v.shards[s] = append(v.shards[s], i)
		}
	}
	v.entries = make([]digestEntry, len(w.provs))
	if w.cfg.Phantoms > 0 {
		phs, err := newPhantoms(w, v, w.cfg.Phantoms)
		if err != nil {
			return nil, err
		}
		v.phantoms, v.phantomOf = phs, map[string]*phantom{}
		for _, list := range phs {
			for _, ph := range list {
				v.phantomOf[ph.id] = ph
			}
		}
	}
	return v, nil
}

// simPeerID is a valid, deterministic peer ID for provider i: the
// identity multihash of an ed25519 public key made of seeded bytes.
// Digests must name a real peer ID; nothing is signed in a replay.
func simPeerID(seed uint64, i int) (string, error) {
	b := []byte{0x00, 36, 0x08, 0x01, 0x12, 32}
	x := splitmix(seed ^ uint64(i)<<16 ^ 0x1d)
	for k := 0; k < 4; k++ {
		x = splitmix(x)
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(x>>s))
		}
	}
	id, err := peer.IDFromBytes(b)
	if err != nil {
		return "", fmt.Errorf("sim: peer ID %d: %w", i, err)
	}
	return id.String(), nil
}

// digest is provider i's current digest, re-issued when its free GPUs
// changed, its calendar opened or closed (the node's digest goes out
// again within a minute), or the refresh timer ran out.
func (v *bidView) digest(w *World, i int) (*auction.Digest, error) {
	e := &v.entries[i]
	p := w.provs[i]
	now := w.nowTime()
	if e.d != nil && e.free == p.free && w.now-e.at < digestRefresh && !calendarChanged(w, e.d, p, now) {
		return e.d, nil
	}
	c := *p.cap
	c.Peer = v.peerOf[i]
	e.seq++
	d, err := issueDigest(c, e.seq, now)
	if err != nil {
		return nil, err
	}
	e.d, e.free, e.at = d, p.free, w.now
	return d, nil
}

// issueDigest is the digest a host of capacity c issues at now, with
// sequence number seq: reachable, its record valid for MaxDigestTTL.
func issueDigest(c auction.Capacity, seq uint64, now time.Time) (*auction.Digest, error) {
	c.Reachability = auction.ReachPublic
	c.IssuedAtMs = now.UnixMilli()
	c.ExpiresAtMs = now.Add(auction.MaxDigestTTL).UnixMilli()
	d, err := auction.NewDigest(auction.DigestInput{Capacity: &c, Seq: seq, Now: now})
	if err != nil {
		return nil, fmt.Errorf("sim: digest of %s: %w", c.Peer, err)
	}
	return d, nil
}

// calendarChanged reports whether p's calendar opened or closed since d.
func calendarChanged(w *World, d *auction.Digest, p *provider, now time.Time) bool {
	if !w.calendars {
		return false
	}
	_, open := p.cap.WindowAt(now)
	return d.ClosedAt(now) == open
}

// lotSplit splits every shard of the replay into n lots by peer-ID hash
// (auction.Lot; n below 2: none), and the renter publishes each RFQ on
// the perRFQ lots of each shard that hold its cheapest fitting offers
// (docs/protocol.md §3.6) among the seen lots it follows (0: all), from
// the one its key (renter) hashes to.
type lotSplit struct {
	n, perRFQ, seen int
	renter          string
}

// follows reports whether the renter follows lot l.
func (ls lotSplit) follows(l int) bool {
	return auction.FollowsLot(ls.renter, l, ls.n, ls.seen)
}

// shardLot is one lot of a shard: the topic a lot's providers share.
type shardLot struct {
	s   auction.Shard
	lot int
}

// bidders returns which of cands bid on rfq, whose renter's
// market.want_bids is wantBids (auction.RFQWantBids: more for more GPUs,
// split over the topics the RFQ goes to), how many providers the
// digests showed as feasible (the bids "everyone bids" would draw), and
// how many providers are on those topics (each receives the RFQ). With
// verify, every provider also decides alone with auction.ShouldBid, and
// any disagreement with auction.SelectBidders is an error. calendarBlind
// is the rule before issue 27: blind to when calendars close (a digest
// closed when issued still shows no free GPU), and want_bids the same for
// every job. With lots, each lot is a market of its own: its providers
// decide over their lot's digests only.
func (v *bidView) bidders(w *World, rfq *auction.RFQ, rfqID string, cands []*provider, wantBids int, lots lotSplit, verify, calendarBlind bool) (bidders []*provider, feasible, reach, phantoms int, err error) {
	r := *rfq
	if r.Runtime == "" {
		r.Runtime = auction.RuntimeDocker // what Quote assumes for an empty one
	}
	rfq = &r
	now := w.nowTime()
	if calendarBlind {
		now = time.Time{}
	}
	view := map[shardLot][]*auction.Digest{}
	best := map[shardLot]uint64{}
	shardBest := map[auction.Shard]uint64{}
	add := func(s auction.Shard, d *auction.Digest) {
		k := shardLot{s, auction.Lot(d.Peer, lots.n)}
		if !lots.follows(k.lot) {
			return // not in this renter's view
		}
		view[k] = append(view[k], d)
		if price, _, ok := auction.DigestFitsOn(rfq, d, s); ok && d.TakesNow(rfq, now) {
			if b, seen := best[k]; !seen || price < b {
				best[k] = price
			}
			if b, seen := shardBest[s]; !seen || price < b {
				shardBest[s] = price
			}
		}
	}
	for s, idx := range v.shards {
		for _, i := range idx {
			d, err := v.digest(w, i)
			if err != nil {
				return nil, 0, 0, 0, err
			}
			add(s, d)
		}
	}
	watch, at := !w.cfg.NoPrefixWatch, w.nowTime()
	for s, list := range v.phantoms {
		for _, ph := range list {
			if !ph.inView(at, watch) {
				continue
			}
			d, err := ph.digest(w)
			if err != nil {
				return nil, 0, 0, 0, err
			}
			add(s, d)
		}
	}
	known := make([]auction.Shard, 0, len(shardBest))
	for s := range shardBest {
		known = append(known, s)
	}
	slices.SortFunc(known, func(x, y auction.Shard) int {
		return cmp.Or(cmp.Compare(shardBest[x], shardBest[y]), cmp.Compare(x, y))
	})
	var targets []shardLot
	for _, s := range auction.RFQShards(rfq, known) {
		if lots.n < 2 {
			targets = append(targets, shardLot{s, 0})
			continue
		}
		var fit []shardLot
		for l := range lots.n {
			if _, ok := best[shardLot{s, l}]; ok {
				fit = append(fit, shardLot{s, l})
			}
		}
		slices.SortFunc(fit, func(x, y shardLot) int { return cmp.Or(cmp.Compare(best[x], best[y]), cmp.Compare(x.lot, y.lot)) })
		targets = append(targets, fit[:min(len(fit), lots.perRFQ)]...)
	}
	if len(targets) == 0 {
		return nil, 0, 0, 0, nil
	}
	r.WantBids = auction.RFQWantBids(wantBids, r.Resources.GPUs, 1, len(targets))
	if calendarBlind {
		r.WantBids = auction.RFQWantBids(wantBids, 1, 1, len(targets))
	}
	picked := map[int]bool{}
	for _, k := range targets {
		in := auction.BidSelectInput{RFQ: &r, RFQID: rfqID, Shard: k.s, Digests: view[k], Now: now}
		sel := auction.SelectBidders(in)
		feasible += sel.Feasible
		reach += len(view[k])
		for _, id := range append(slices.Clone(sel.Always), sel.Sampled...) {
			if ph := v.phantomOf[id]; ph != nil {
				phantoms++ // expected, and no bid comes
				if watch {
					ph.missed(at)
				}
				continue
			}
			picked[v.byPeer[id]] = true
		}
		if !verify {
			continue
		}
		for _, d := range view[k] {
			bids, _ := auction.ShouldBid(in, d.Peer)
			if bids != sel.Includes(d.Peer) {
				return nil, 0, 0, 0, fmt.Errorf("sim: %s on %s lot %d: ShouldBid %v, SelectBidders %v", d.Peer, k.s, k.lot, bids, !bids)
			}
		}
	}
	out := slices.DeleteFunc(slices.Clone(cands), func(p *provider) bool { return !picked[p.idx] })
	return out, feasible, reach, phantoms, nil
}
