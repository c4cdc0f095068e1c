package trust

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// DigestsProto serves the digests a node vouches for (its backed
// providers), so that a node joining the network has the market view in
// seconds instead of walking the DHT. A client first asks for a shard's
// summary, 256 buckets by peer-ID hash each with a count and a hash, then
// pages only through the buckets whose summary differs from its own book's:
// it fetches what it lacks, not the whole book again. Request and response
// are canonical CBOR (docs/protocol.md §6.4).
const DigestsProto protocol.ID = "/idlegrid/digests/2.0.0"

// Sync limits. A page of 256 digests is at most 768 KiB (digests are at
// most 3 KiB, typically 0.5).
const (
	syncVersion   = 2
	syncPage      = 256
	syncPeers     = 6
	syncMaxPages  = auction.MaxBookDigests/syncPage + auction.DigestBuckets
	syncEvery     = 5 * time.Minute
	syncWhenEmpty = 2 * time.Second
	// syncYoung is the sync interval for the first syncYoungFor after
	// start, while the shards' meshes form and early digests are missed.
	syncYoung    = 10 * time.Second
	syncYoungFor = 5 * time.Minute
)

// Serving rates: per asking peer, per its network (/24) and for all
// askers together. A full sync of 100,000 providers is about 400 pages,
// allowed over a minute or two; a flood of requests is refused and the
// peer (or network) that floods is charged.
const (
	syncPeerRate, syncPeerBurst       = 5, 40
	syncNetworkRate, syncNetworkBurst = 10, 80
	syncAllRate, syncAllBurst         = 50, 200
	syncRateKeys                      = 4096
)

// Abuse of the sync protocol: requests over a peer's or its network's
// rate, and pages no honest server sends (a digest off the shard or the
// bucket asked for, out of order, unsigned or over the page size).
const (
	AbuseDigestSyncRate p2p.AbuseReason = "digest_sync_rate"
	AbuseDigestSyncPage p2p.AbuseReason = "digest_sync_bad_page"
	syncRatePoints                      = 1
	syncPagePoints                      = 20
)

// DigestsLimits bound one exchange of DigestsProto.
var DigestsLimits = p2p.StreamLimits{MaxRequest: 512, MaxResponse: syncPage*3<<10 + 4<<10, Timeout: 10 * time.Second}

// digestsRequest asks for one shard's summary (Sum), or for the digests
// of the buckets in Buckets (a 32-byte bitmap) that come after the peer
// After in sync order (auction.SyncBefore: by bucket, then peer ID).
type digestsRequest struct {
	V       uint   `cbor:"v"`
	Shard   string `cbor:"shard,omitempty"`
	Sum     bool   `cbor:"sum,omitempty"`
	Buckets []byte `cbor:"buckets,omitempty"`
	After   string `cbor:"after,omitempty"`
	Limit   uint32 `cbor:"limit,omitempty"`
}

// digestsSummary is a shard's summary: DigestBuckets (count, hash) pairs.
type digestsSummary struct {
	V    uint        `cbor:"v"`
	Sums []bucketSum `cbor:"sums"`
}

type bucketSum struct {
	_     struct{} `cbor:",toarray"`
	Count uint32
	Hash  uint64
}

// digestsPage is one page; Next is empty on the last.
type digestsPage struct {
	V       uint     `cbor:"v"`
	Digests [][]byte `cbor:"digests"`
	Next    string   `cbor:"next,omitempty"`
}

var (
	syncEnc, _ = cbor.CoreDetEncOptions().EncMode()
	syncDec, _ = cbor.DecOptions{
		DupMapKey: cbor.DupMapKeyEnforcedAPF, ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		MaxArrayElements: max(syncPage, auction.DigestBuckets) + 1, MaxNestedLevels: 4,
	}.DecMode()
)

// digestSync holds the serving rates and the digests recently checked.
type digestSync struct {
	peers, networks, all *budgets

	mu   sync.Mutex
	seen map[[sha256.Size]byte]time.Time
}

func newDigestSync() *digestSync {
	return &digestSync{
		peers:    newBudgets(syncPeerRate, syncPeerBurst, syncRateKeys),
		networks: newBudgets(syncNetworkRate, syncNetworkBurst, syncRateKeys),
		all:      newBudgets(syncAllRate, syncAllBurst, 1),
		seen:     map[[sha256.Size]byte]time.Time{},
	}
}

// known reports whether these exact bytes were taken within the last
// syncEvery: a sync from several peers gets the same digests many times,
// and each costs a signature check to open.
func (s *digestSync) known(raw []byte, now time.Time) bool {
	h := sha256.Sum256(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.seen[h]
	return ok && now.Sub(at) < syncEvery
}

// forget drops raw from the digests taken, so that a sync may offer it
// again: its provider's record did not back it, and once the provider's
// unbacked time is over the same digest is worth a check again.
func (s *digestSync) forget(raw []byte) {
	h := sha256.Sum256(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, h)
}

// remember notes that raw was taken.
func (s *digestSync) remember(raw []byte, now time.Time) {
	h := sha256.Sum256(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) >= auction.MaxBookDigests {
		clear(s.seen)
	}
	s.seen[h] = now
}

// errSyncRate refuses a request over a rate.
var errSyncRate = errors.New("digest sync: too many requests")

// ServeDigests answers one DigestsProto request from the digests of
// backed providers. A peer or network over its rate is refused and
// charged; over the rate of all askers, the request is refused only.
func (t *Trust) ServeDigests(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	now := t.now()
	switch {
	case !t.sync.peers.take(now, string(from)):
		t.p2p.Guard().Charge(from, AbuseDigestSyncRate, syncRatePoints)
		return nil, errSyncRate
	case !t.sync.networks.take(now, t.p2p.Subnet(from)):
		t.p2p.Guard().Charge(from, AbuseDigestSyncRate, syncRatePoints)
		return nil, errSyncRate
	case !t.sync.all.take(now, "all"):
		return nil, errSyncRate
	}
	var r digestsRequest
	if err := syncDec.Unmarshal(req, &r); err != nil || r.V != syncVersion {
		return nil, fmt.Errorf("digest sync request: %w", errors.Join(p2p.ErrMalformed, err))
	}
	shard := auction.Shard(r.Shard)
	var set auction.BucketSet
	if shard != "" && !shard.Valid() || !r.Sum && len(r.Buckets) != len(set) {
		return nil, fmt.Errorf("digest sync request: %w: shard %q, %d bytes of buckets", p2p.ErrMalformed, r.Shard, len(r.Buckets))
	}
	copy(set[:], r.Buckets)
	view := auction.SyncView{Shard: shard, Now: now, Keep: func(d *auction.Digest) bool { return t.backed(d, now) }}
	if r.Sum {
		sum := t.digests.Summary(view)
		out := digestsSummary{V: syncVersion, Sums: make([]bucketSum, len(sum))}
		for i, s := range sum {
			out.Sums[i] = bucketSum{Count: s.Count, Hash: s.Hash}
		}
		return syncEnc.Marshal(out)
	}
	raws, next := t.digests.Page(view, set, r.After, max(1, min(int(r.Limit), syncPage)))
	return syncEnc.Marshal(digestsPage{V: syncVersion, Digests: raws, Next: next})
}

// errSourceFull stops a sync from a source that has put as many
// unchecked providers into the book as its budget allows.
var errSourceFull = errors.New("the source's budget of unchecked providers is spent")

// syncFrom syncs this node's shards (a renter: the whole book) from one
// peer. It returns how many digests were new. A peer whose budget of
// unchecked providers is spent is not asked: its last pages only grew the
// book, and their checks are not done.
func (t *Trust) syncFrom(ctx context.Context, p peer.ID) (int, error) {
	if !t.newPeers.has(t.now(), p, t.p2p.Subnet(p)) {
		return 0, fmt.Errorf("digest sync from %s: %w", p, errSourceFull)
	}
	if t.syncShards == nil {
		return t.syncShard(ctx, p, "")
	}
	added := 0
	for _, s := range t.syncShards() {
		n, err := t.syncShard(ctx, p, s)
		added += n
		if err != nil {
			return added, err
		}
	}
	return added, nil
}

// syncShard compares one shard's summary ("" for all) with the peer's and
// pages through the buckets that differ. Every digest is opened, checked
// against the shard and buckets asked for, and offered to the book like a
// gossiped one; a page no honest server sends ends the sync and is
// charged to the peer.
func (t *Trust) syncShard(ctx context.Context, p peer.ID, shard auction.Shard) (int, error) {
	theirs, err := t.requestSummary(ctx, p, shard)
	if err != nil {
		return 0, err
	}
	mine := t.digests.Summary(auction.SyncView{Shard: shard, Now: t.now()})
	var want auction.BucketSet
	wanted := false
	for _, b := range mine.Diff(&theirs) {
		if theirs[b].Count > 0 {
			want.Add(b)
			wanted = true
		}
	}
	added, after := 0, ""
	for pages := 0; wanted && pages < syncMaxPages; pages++ {
		var page digestsPage
		req := digestsRequest{V: syncVersion, Shard: string(shard), Buckets: want[:], After: after, Limit: syncPage}
		if err := t.syncRequest(ctx, p, req, &page); err != nil {
			return added, err
		}
		n, err := t.takePage(ctx, p, shard, &want, after, page)
		added += n
		if err != nil || page.Next == "" {
			return added, err
		}
		after = page.Next
	}
	return added, nil
}

func (t *Trust) requestSummary(ctx context.Context, p peer.ID, shard auction.Shard) (auction.BookSummary, error) {
	var sum auction.BookSummary
	var resp digestsSummary
	if err := t.syncRequest(ctx, p, digestsRequest{V: syncVersion, Shard: string(shard), Sum: true}, &resp); err != nil {
		return sum, err
	}
	if len(resp.Sums) != auction.DigestBuckets {
		t.p2p.Guard().Charge(p, AbuseDigestSyncPage, syncPagePoints)
		return sum, fmt.Errorf("digest sync from %s: a summary of %d buckets", p, len(resp.Sums))
	}
	for i, s := range resp.Sums {
		sum[i] = auction.BucketSum{Count: s.Count, Hash: s.Hash}
	}
	return sum, nil
}

// syncRequest sends one request and decodes the response; a response
// that does not decode is charged to p.
func (t *Trust) syncRequest(ctx context.Context, p peer.ID, req digestsRequest, out any) error {
	raw, err := syncEnc.Marshal(req)
	if err != nil {
		return err
	}
	resp, err := t.p2p.Request(ctx, p, DigestsProto, raw, DigestsLimits)
	if err != nil {
		return fmt.Errorf("digest sync from %s: %w", p, err)
	}
	if err := syncDec.Unmarshal(resp, out); err != nil {
		t.p2p.Guard().Charge(p, AbuseDigestSyncPage, syncPagePoints)
		return fmt.Errorf("digest sync from %s: %w", p, err)
	}
	return nil
}

// takePage checks a page against what was asked and offers its digests to
// the book, with the records of the providers new to it asked of the same
// server first (records_serve.go), so that their checks need no DHT
// lookup. It returns how many were new.
func (t *Trust) takePage(ctx context.Context, p peer.ID, shard auction.Shard, want *auction.BucketSet, after string, page digestsPage) (int, error) {
	bad := func(format string, args ...any) error {
		t.p2p.Guard().Charge(p, AbuseDigestSyncPage, syncPagePoints)
		return fmt.Errorf("digest sync from %s: "+format, append([]any{p}, args...)...)
	}
	if page.V != syncVersion || len(page.Digests) > syncPage {
		return 0, bad("a page of version %d with %d digests", page.V, len(page.Digests))
	}
	now := t.now()
	type taken struct {
		d   *auction.Digest
		raw []byte
	}
	var fresh []taken
	var unchecked []peer.ID
	last := after
	for _, raw := range page.Digests {
		d, signer, err := t.digests.Open(raw)
		switch {
		case err != nil || signer.String() != d.Peer:
			return 0, bad("a digest that does not open: %v", err)
		case shard != "" && !d.OnShard(shard) && !d.FormerlyOnShard(shard):
			return 0, bad("a digest of %s off shard %s", d.Peer, shard)
		case !want.Has(auction.DigestBucket(d.Peer)):
			return 0, bad("a digest of %s outside the buckets asked for", d.Peer)
		case last != "" && !auction.SyncBefore(last, d.Peer):
			return 0, bad("digests out of order at %s", d.Peer)
		}
		last = d.Peer
		if shard != "" && !d.OnShard(shard) {
			continue // an earlier release's shard rule (auction.Digest.FormerlyOnShard)
		}
		if t.sync.known(raw, now) || d.CheckTime(now) != nil {
			continue
		}
		fresh = append(fresh, taken{d, raw})
		if ev := t.ev.of(d.Peer); signer != t.self && !ev.Backed(now) && !ev.checking && !now.Before(ev.unbackedUntil) {
			unchecked = append(unchecked, signer)
		}
	}
	if page.Next != "" && page.Next != last {
		return 0, bad("a page whose cursor %q is not its last digest", page.Next)
	}
	// A source puts at most newPeersPerSource unchecked providers into
	// the book at a time: asking for more records would be wasted.
	unchecked = unchecked[:min(len(unchecked), newPeersPerSource)]
	for len(unchecked) > 0 {
		n := min(len(unchecked), recordsBatch)
		actx, cancel := context.WithTimeout(ctx, recordsAskTimeout)
		_, _ = t.askRecords(actx, p, unchecked[:n]) // what it got is cached; a failure leaves the checks to ask
		cancel()
		unchecked = unchecked[n:]
	}
	added := 0
	for _, f := range fresh {
		switch t.admit(f.d, f.raw, p) {
		case admitBacked, admitHeld:
			added++
		case admitRefused: // the source only grows the book: stop paging it
			return added, fmt.Errorf("digest sync from %s: %w", p, errSourceFull)
		case admitUnbacked:
			continue // not remembered: worth a check once its unbacked time is over
		}
		t.sync.remember(f.raw, now)
	}
	return added, nil
}

// runSync syncs the book from a few connected peers that serve it: every
// couple of seconds while the book is empty, then every syncEvery (gossip
// keeps it current in between; a sync repairs what gossip missed).
func (t *Trust) runSync(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	started := t.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		peers := t.syncPeers()
		grew := false
		for _, p := range peers {
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			n, err := t.syncFrom(sctx, p)
			cancel()
			if n > 0 {
				grew = true
				t.log.Debug("digests synced", "peer", p, "new", n, "book", t.digests.Len())
			}
			if err != nil {
				t.log.Debug("digest sync", "peer", p, "err", err)
			}
		}
		wait := syncEvery
		switch {
		case t.digests.Len() == 0 || len(peers) == 0 || grew:
			wait = syncWhenEmpty // until a round learns nothing new
		case t.now().Sub(started) < syncYoungFor:
			wait = syncYoung
		}
		timer.Reset(wait)
	}
}

// syncCutoffPoints: a peer charged this many abuse points (served digests
// whose records did not back them, pages no honest server sends) is not
// synced from until its points decay.
const syncCutoffPoints = 20

// syncPeers are up to syncPeers connected peers that speak DigestsProto
// and were not charged lately, in random order.
func (t *Trust) syncPeers() []peer.ID {
	h := t.p2p.Host()
	var out []peer.ID
	for _, p := range h.Network().Peers() {
		if t.p2p.Guard().Points(p) >= syncCutoffPoints {
			continue
		}
		if ok, err := h.Peerstore().SupportsProtocols(p, DigestsProto); err == nil && len(ok) > 0 {
			out = append(out, p)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(len(out), syncPeers)]
}
