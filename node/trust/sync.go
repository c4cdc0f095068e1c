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
	"golang.org/x/time/rate"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// DigestsProto serves a node's digest book, a page at a time, so that a
// node joining the network has the whole market view in seconds instead
// of walking the DHT. Request and response are canonical CBOR.
const DigestsProto protocol.ID = "/idlegrid/digests/1.0.0"

// Sync limits. A page of 256 digests is at most 768 KiB (digests are at
// most 3 KiB, typically 0.5).
const (
	syncPage      = 256
	syncPeers     = 6
	syncMaxPages  = auction.MaxBookDigests/syncPage + 1
	syncEvery     = 5 * time.Minute
	syncWhenEmpty = 2 * time.Second
	// syncYoung is the sync interval for the first syncYoungFor after
	// start, while the shards' meshes form and early digests are missed.
	syncYoung    = 10 * time.Second
	syncYoungFor = 5 * time.Minute
)

// DigestsLimits bound one exchange of DigestsProto.
var DigestsLimits = p2p.StreamLimits{MaxRequest: 512, MaxResponse: syncPage*3<<10 + 4<<10, Timeout: 10 * time.Second}

// digestsRequest asks for the digests of peers after After (by peer ID),
// on one shard ("" for all).
type digestsRequest struct {
	V     uint   `cbor:"v"`
	Shard string `cbor:"shard,omitempty"`
	After string `cbor:"after,omitempty"`
	Limit uint32 `cbor:"limit"`
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
		MaxArrayElements: syncPage + 1, MaxNestedLevels: 4,
	}.DecMode()
)

// digestSync serves and fetches digest pages, with a rate per asking peer.
type digestSync struct {
	t *Trust

	mu    sync.Mutex
	rates map[peer.ID]*rate.Limiter
	seen  map[[sha256.Size]byte]time.Time
}

func newDigestSync(t *Trust) *digestSync {
	return &digestSync{t: t, rates: map[peer.ID]*rate.Limiter{}, seen: map[[sha256.Size]byte]time.Time{}}
}

// known reports whether these exact bytes were seen within the last
// syncEvery, and remembers them: a sync from several peers gets the same
// digests many times, and each costs a signature check to open.
func (s *digestSync) known(raw []byte, now time.Time) bool {
	h := sha256.Sum256(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.seen[h]; ok && now.Sub(at) < syncEvery {
		return true
	}
	if len(s.seen) >= auction.MaxBookDigests {
		clear(s.seen)
	}
	s.seen[h] = now
	return false
}

// maxSyncClients bounds the per-peer rate state.
const maxSyncClients = 4096

func (s *digestSync) allow(p peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.rates[p]
	if !ok {
		if len(s.rates) >= maxSyncClients {
			clear(s.rates) // forgetting rates only lets peers start afresh
		}
		// A full sync of 100k providers is ~400 pages: allowed over a
		// minute or two, never as a flood.
		l = rate.NewLimiter(5, 40)
		s.rates[p] = l
	}
	return l.Allow()
}

// ServeDigests answers one DigestsProto request.
func (t *Trust) ServeDigests(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	if !t.sync.allow(from) {
		return nil, errors.New("digest sync: too many requests")
	}
	var r digestsRequest
	if err := syncDec.Unmarshal(req, &r); err != nil || r.V != 1 {
		return nil, fmt.Errorf("digest sync request: %w", errors.Join(p2p.ErrMalformed, err))
	}
	limit := max(1, min(int(r.Limit), syncPage))
	page := digestsPage{V: 1}
	last := ""
	for _, d := range t.digests.Digests(auction.Shard(r.Shard), t.now()) {
		if d.Peer <= r.After {
			continue
		}
		if len(page.Digests) == limit {
			page.Next = last
			break
		}
		if _, raw, ok := t.digests.Get(d.Peer); ok {
			page.Digests = append(page.Digests, raw)
			last = d.Peer
		}
	}
	return syncEnc.Marshal(page)
}

// syncFrom pages through one peer's book, adding every digest that
// verifies (each is opened and checked like a gossiped one). It returns
// how many were new.
func (t *Trust) syncFrom(ctx context.Context, p peer.ID) (int, error) {
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

// syncShard pages through one shard ("" for all) of a peer's book.
func (t *Trust) syncShard(ctx context.Context, p peer.ID, shard auction.Shard) (int, error) {
	added, after := 0, ""
	for range syncMaxPages {
		req, err := syncEnc.Marshal(digestsRequest{V: 1, Shard: string(shard), After: after, Limit: syncPage})
		if err != nil {
			return added, err
		}
		resp, err := t.p2p.Request(ctx, p, DigestsProto, req, DigestsLimits)
		if err != nil {
			return added, fmt.Errorf("digest sync from %s: %w", p, err)
		}
		var page digestsPage
		if err := syncDec.Unmarshal(resp, &page); err != nil {
			return added, fmt.Errorf("digest sync from %s: %w", p, err)
		}
		now := t.now()
		for _, raw := range page.Digests {
			if t.sync.known(raw, now) {
				continue // the same bytes as a digest already checked
			}
			d, signer, err := t.digests.Open(raw)
			if err != nil || signer.String() != d.Peer || d.CheckTime(now) != nil {
				continue
			}
			if t.addDigest(raw) {
				added++
			}
		}
		if page.Next == "" || page.Next <= after {
			return added, nil
		}
		after = page.Next
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
			if err != nil {
				t.log.Debug("digest sync", "peer", p, "err", err)
				continue
			}
			if n > 0 {
				grew = true
				t.log.Debug("digests synced", "peer", p, "new", n, "book", t.digests.Len())
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

// syncPeers are up to syncPeers connected peers that speak DigestsProto,
// in random order.
func (t *Trust) syncPeers() []peer.ID {
	h := t.p2p.Host()
	var out []peer.ID
	for _, p := range h.Network().Peers() {
		if ok, err := h.Peerstore().SupportsProtocols(p, DigestsProto); err == nil && len(ok) > 0 {
			out = append(out, p)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(len(out), syncPeers)]
}

// Run keeps the market view: digest sync and pruning, until ctx ends.
func (t *Trust) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { t.runSync(ctx) })
	wg.Go(func() { t.pruneDigests(ctx) })
	wg.Wait()
	return nil
}
