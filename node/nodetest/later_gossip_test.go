package nodetest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/p2p"
)

// bareClient is a bare gossipsub client on the cluster's network, standing
// in for a node of a later release or a hostile one, with the signature
// options given, joined to topics and connected to targets, each of them
// a peer on every topic (a publish then reaches each target directly).
type bareClient struct {
	h      host.Host
	topics map[string]*pubsub.Topic
}

func newBareClient(t *testing.T, ctx context.Context, c *nodetest.Cluster, policy []pubsub.Option, targets []*nodetest.Member, topics ...string) *bareClient {
	t.Helper()
	h, err := c.Net.GenPeer()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Net.LinkAll(); err != nil {
		t.Fatal(err)
	}
	ps, err := pubsub.NewGossipSub(ctx, h, append([]pubsub.Option{
		pubsub.WithGossipSubProtocols([]protocol.ID{p2p.GossipProtocol}, func(f pubsub.GossipSubFeature, p protocol.ID) bool {
			return p == p2p.GossipProtocol && f == pubsub.GossipSubFeatureMesh
		}),
		pubsub.WithMessageIdFn(func(m *pb.Message) string { s := sha256.Sum256(m.Data); return string(s[:]) }),
	}, policy...)...)
	if err != nil {
		t.Fatal(err)
	}
	n := &bareClient{h: h, topics: map[string]*pubsub.Topic{}}
	for _, name := range topics {
		tp, err := ps.Join(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tp.Close() })
		n.topics[name] = tp
	}
	for _, m := range targets {
		if err := h.Connect(ctx, peer.AddrInfo{ID: m.Node.ID(), Addrs: []ma.Multiaddr{m.Addr}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodetest.WaitFor(ctx, "every target a topic peer of the bare client", func() bool {
		for _, tp := range n.topics {
			peers := tp.ListPeers()
			for _, m := range targets {
				if !slices.Contains(peers, m.Node.ID()) {
					return false
				}
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUnsignedGossipOfTheNextReleaseIsDelivered: the next release stops
// signing gossip messages (p2p.signaturePolicy). Its unsigned RFQs reach
// this release's providers, its own and those it relays for another
// renter, and cost it nothing; an unsigned RFQ whose record's signature is
// spoiled is still rejected and charged to the peer that sent it.
func TestUnsignedGossipOfTheNextReleaseIsDelivered(t *testing.T) {
	c := nodetest.New(t, 6, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	rfqTopic := auction.GPUShard("a10").RFQTopic()
	targets := c.Members[1:4]
	// The next release: no signature, and no author or sequence number
	// either (the release after it refuses messages with any of them).
	later := newBareClient(t, ctx, c, []pubsub.Option{pubsub.WithMessageSignaturePolicy(pubsub.LaxNoSign), pubsub.WithNoAuthor()}, targets, rfqTopic)
	other, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	own := a10RFQBy(t, later.h.Peerstore().PrivKey(later.h.ID()), "own-rfq-nonce-01")
	relayed := a10RFQBy(t, other, "relayed-nonce-02")
	for _, raw := range [][]byte{own, relayed} {
		if err := later.topics[rfqTopic].Publish(ctx, raw); err != nil {
			t.Fatal(err)
		}
	}
	delivered := func(m *nodetest.Member, raw []byte) bool {
		return slices.ContainsFunc(m.Node.RecentGossip(rfqTopic), func(g p2p.Message) bool { return bytes.Equal(g.Data, raw) })
	}
	if err := nodetest.WaitFor(ctx, "both unsigned RFQs at every target", func() bool {
		for _, m := range targets {
			if !delivered(m, own) || !delivered(m, relayed) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	charged := func() (points float64, where int) {
		for _, m := range c.Members {
			for _, pa := range m.Node.P2P().PeerAbuse() {
				if pa.ID == later.h.ID() && pa.AbusePoints > 0 {
					points += pa.AbusePoints
					where = m.Index
				}
			}
		}
		return points, where
	}
	if p, at := charged(); p > 0 {
		t.Fatalf("member %d charged the later node %v points for honest unsigned RFQs", at, p)
	}

	spoiled := a10RFQBy(t, later.h.Peerstore().PrivKey(later.h.ID()), "spoiled-nonce-03")
	spoiled[len(spoiled)-1] ^= 1
	if err := later.topics[rfqTopic].Publish(ctx, spoiled); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the spoiled RFQ charged to its sender", func() bool {
		p, _ := charged()
		return p > 0
	}); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if delivered(m, spoiled) {
			t.Errorf("member %d delivered an RFQ whose signature does not verify", m.Index)
		}
	}
}

// a10RFQBy is a one-A10 RFQ by key's peer, sealed with key.
func a10RFQBy(t *testing.T, key crypto.PrivKey, nonce string) []byte {
	t.Helper()
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := auction.ParseJobSpec(jobYAML(jobOpts{name: "later", gpus: 1, duration: "1m"}))
	if err != nil {
		t.Fatal(err)
	}
	rfq, err := spec.RFQ(id, []byte(nonce), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := auction.SealRFQ(rfq, key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
