package nodetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/trust"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
)

// The digest sync protocol's messages as the wire carries them
// (docs/protocol.md §6.4), for a hostile server.
type (
	wireSyncRequest struct {
		V       uint   `cbor:"v"`
		Shard   string `cbor:"shard,omitempty"`
		Sum     bool   `cbor:"sum,omitempty"`
		Buckets []byte `cbor:"buckets,omitempty"`
		After   string `cbor:"after,omitempty"`
		Limit   uint32 `cbor:"limit,omitempty"`
	}
	wireBucketSum struct {
		_     struct{} `cbor:",toarray"`
		Count uint32
		Hash  uint64
	}
	wireSyncSummary struct {
		V    uint            `cbor:"v"`
		Sums []wireBucketSum `cbor:"sums"`
	}
	wireSyncPage struct {
		V       uint     `cbor:"v"`
		Digests [][]byte `cbor:"digests"`
		Next    string   `cbor:"next,omitempty"`
	}
)

// sybilSyncSource answers digest sync with endless pages of fresh keys:
// every bucket differs in its summary, and each page holds the next 32
// keys of a pool larger than any budget, in sync order.
type sybilSyncSource struct {
	keys  []crypto.PrivKey
	ids   []string
	pages atomic.Int64
	mu    sync.Mutex
	to    map[peer.ID]int
}

func newSybilSyncSource(tb testing.TB, n int) *sybilSyncSource {
	tb.Helper()
	s := &sybilSyncSource{to: map[peer.ID]int{}}
	type key struct {
		sk crypto.PrivKey
		id string
	}
	var ks []key
	for range n {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			tb.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(sk)
		ks = append(ks, key{sk, id.String()})
	}
	slices.SortFunc(ks, func(a, b key) int {
		if auction.SyncBefore(a.id, b.id) {
			return -1
		}
		return 1
	})
	for _, k := range ks {
		s.keys, s.ids = append(s.keys, k.sk), append(s.ids, k.id)
	}
	return s
}

func (s *sybilSyncSource) serve(a *hostile.Attacker) {
	enc, _ := cbor.CoreDetEncOptions().EncMode()
	a.ServeRequests(trust.DigestsProto, func(from peer.ID, req []byte) []byte {
		var r wireSyncRequest
		if err := cbor.Unmarshal(req, &r); err != nil {
			return nil
		}
		if r.Sum {
			out := wireSyncSummary{V: r.V, Sums: make([]wireBucketSum, auction.DigestBuckets)}
			for i := range out.Sums {
				out.Sums[i] = wireBucketSum{Count: 1 << 20, Hash: uint64(time.Now().UnixNano())}
			}
			raw, _ := enc.Marshal(out)
			return raw
		}
		s.pages.Add(1)
		s.mu.Lock()
		s.to[from]++
		s.mu.Unlock()
		var want auction.BucketSet
		copy(want[:], r.Buckets)
		page := wireSyncPage{V: r.V}
		for i, id := range s.ids {
			if !want.Has(auction.DigestBucket(id)) || r.After != "" && !auction.SyncBefore(r.After, id) {
				continue
			}
			_, raws := sybilDigestsOf([]crypto.PrivKey{s.keys[i]}, time.Now())
			page.Digests = append(page.Digests, raws[0])
			if page.Next = id; len(page.Digests) == 32 {
				break
			}
		}
		raw, _ := enc.Marshal(page)
		return raw
	})
}

func (s *sybilSyncSource) pagesTo(p peer.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.to[p]
}

// rfqChurn publishes RFQs from a new renter key each, through hostile
// peers.
type rfqChurn struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sent   atomic.Int64
	start  time.Time
}

// startRFQChurn has n attackers (each in a network of its own) publish
// fresh-key RFQs on topic at perSecond each until stop.
func startRFQChurn(tb testing.TB, ctx context.Context, m *hostileMarket, topic string, n int, perSecond float64) *rfqChurn {
	tb.Helper()
	ctx, cancel := context.WithCancel(ctx)
	ch := &rfqChurn{cancel: cancel}
	spec, err := auction.ParseJobSpec(benchJob(0))
	if err != nil {
		tb.Fatal(err)
	}
	var attackers []*hostile.Attacker
	for i := range n {
		a := m.attacker(tb, ctx, 100+i, nil)
		if err := a.WaitTopicPeer(ctx, topic, m.providers[0].Node.ID()); err != nil {
			tb.Fatal(err)
		}
		attackers = append(attackers, a)
	}
	ch.start = time.Now()
	for i, a := range attackers {
		ch.wg.Go(func() {
			tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				sk, _, _ := crypto.GenerateEd25519Key(nil)
				id, _ := peer.IDFromPrivateKey(sk)
				rfq, err := spec.RFQ(id, fmt.Appendf(nil, "churn-%03d-%06d", i, k%1_000_000), time.Now()) // a 16-byte nonce
				if err != nil {
					panic(err)
				}
				raw, err := auction.SealRFQ(rfq, sk)
				if err != nil {
					panic(err)
				}
				if a.PublishAs(ctx, topic, sk, raw) == nil {
					ch.sent.Add(1)
				}
			}
		})
	}
	return ch
}

// stop ends the churn and returns how many RFQs were sent, over how long.
func (c *rfqChurn) stop() (int, time.Duration) {
	took := time.Since(c.start)
	c.cancel()
	c.wg.Wait()
	return int(c.sent.Load()), took
}
