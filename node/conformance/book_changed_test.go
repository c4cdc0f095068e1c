package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/conformance"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/node/trust"
)

// TestCheckAsksAgainWhenTheBookChanges: a digest that arrives or expires
// between the summary and the page is no fault of the peer, so the check
// asks for both again; a peer whose page never matches its summary still
// fails. (TestNodesConform failed in CI on a bootstrap peer that received
// its first digest between the two requests.)
func TestCheckAsksAgainWhenTheBookChanges(t *testing.T) {
	c := nodetest.New(t, 1, nodetest.Options{})
	h, err := c.AddPeer(ma.StringCast("/ip4/10.9.0.5/tcp/7401"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for i, tc := range []struct {
		name string
		// counted is what the n-th summary (from 0) counts; every page
		// is empty.
		counted func(n int64) uint64
		ok      bool
	}{
		{"one digest expired between the first two requests", func(n int64) uint64 { return max(0, 1-uint64(n)) }, true},
		{"a summary that never matches its page", func(int64) uint64 { return 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.AddPeer(ma.StringCast(fmt.Sprintf("/ip4/10.9.1.%d/tcp/7401", i+1)))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, err := c.Net.LinkPeers(h.ID(), p.ID()); err != nil {
				t.Fatal(err)
			}
			var summaries atomic.Int64
			p.SetStreamHandler(trust.DigestsProto, func(s network.Stream) {
				defer s.Close()
				raw, err := msgio.NewVarintReaderSize(s, 512).ReadMsg()
				if err != nil {
					_ = s.Reset()
					return
				}
				var req struct {
					Sum bool `cbor:"sum"`
				}
				_ = cbor.Unmarshal(raw, &req)
				var resp any = map[string]any{"v": 2, "digests": [][]byte{}}
				if req.Sum {
					sums := make([][]uint64, auction.DigestBuckets)
					for b := range sums {
						sums[b] = []uint64{0, 0}
					}
					sums[0][0] = tc.counted(summaries.Add(1) - 1)
					resp = map[string]any{"v": 2, "sums": sums}
				}
				out, _ := cbor.Marshal(resp)
				_ = msgio.NewVarintWriter(s).WriteMsg(out)
			})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var page *conformance.Result
			for _, r := range conformance.Check(ctx, h, peer.AddrInfo{ID: p.ID(), Addrs: p.Addrs()}) {
				t.Logf("%-15s ok=%v %s", r.Check, r.OK, r.Detail)
				if r.Check == "digest-page" {
					page = &r
				}
			}
			switch {
			case page == nil:
				t.Fatal("no digest-page check")
			case page.OK != tc.ok:
				t.Errorf("digest-page ok=%v after %d summaries, want %v: %s", page.OK, summaries.Load(), tc.ok, page.Detail)
			case !tc.ok && (summaries.Load() < 2 || !strings.Contains(page.Detail, "changed")):
				t.Errorf("a lasting mismatch reported after %d summaries: %s", summaries.Load(), page.Detail)
			}
		})
	}
}
