package nodetest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
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
	"google.golang.org/protobuf/proto"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
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

// TestGossipAcrossReleases: this release signs no gossip message and sets
// neither author nor sequence number (p2p.signaturePolicy), the second of
// three releases that retire gossipsub's own signature.
//   - The last release signs: its RFQ reaches this release's providers
//     and costs it nothing.
//   - A gossip signature that is present is still checked: a valid RFQ
//     under a signature that does not verify is rejected by the router and
//     costs its sender gossip score.
//   - The next release refuses signed and authored messages: it takes this
//     release's RFQs. Its own unsigned messages, one relayed for another
//     renter among them, reach this release's providers and cost nothing.
//   - Without a gossip signature the record's is all there is: an
//     unsigned RFQ whose record's signature is spoiled is rejected and
//     charged to the peer that sent it.
func TestGossipAcrossReleases(t *testing.T) {
	c := nodetest.New(t, 6, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	rfqTopic := auction.GPUShard("a10").RFQTopic()
	renter := c.ByRole(node.RoleRenter)[0]
	targets := c.ByRole(node.RoleProvider)[:3]
	delivered := func(m *nodetest.Member, raw []byte) bool {
		return slices.ContainsFunc(m.Node.RecentGossip(rfqTopic), func(g p2p.Message) bool { return bytes.Equal(g.Data, raw) })
	}
	deliveredAtAll := func(what string, raws ...[]byte) {
		t.Helper()
		if err := nodetest.WaitFor(ctx, what+" at every target", func() bool {
			for _, m := range targets {
				for _, raw := range raws {
					if !delivered(m, raw) {
						return false
					}
				}
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	abuse := func(p peer.ID) (points, worstScore float64, where int) {
		for _, m := range c.Members {
			for _, pa := range m.Node.P2P().PeerAbuse() {
				if pa.ID != p {
					continue
				}
				if pa.AbusePoints > 0 {
					points += pa.AbusePoints
					where = m.Index
				}
				worstScore = min(worstScore, pa.GossipScore)
			}
		}
		return points, worstScore, where
	}
	other, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	// The last release: pubsub's default signing, which LaxSign was.
	last := newBareClient(t, ctx, c, []pubsub.Option{pubsub.WithMessageSignaturePolicy(pubsub.LaxSign)}, targets, rfqTopic)
	own := a10RFQBy(t, last.h.Peerstore().PrivKey(last.h.ID()), "own-rfq-nonce-01")
	if err := last.topics[rfqTopic].Publish(ctx, own); err != nil {
		t.Fatal(err)
	}
	deliveredAtAll("the last release's signed RFQ", own)
	if p, score, at := abuse(last.h.ID()); p > 0 || score < 0 {
		t.Fatalf("member %d charged the last release's node %v points (gossip score %v) for an honest signed RFQ", at, p, score)
	}

	// A valid RFQ under a gossip signature that does not verify, sent as
	// a raw RPC: pubsub would not publish it.
	forged := a10RFQBy(t, other, "forged-nonce-003")
	for _, m := range targets {
		sendRawRPC(t, ctx, last.h, m.Node.ID(), &pb.Message{
			From: []byte(last.h.ID()), Seqno: []byte{0, 0, 0, 0, 0, 0, 0, 9}, Topic: &rfqTopic,
			Data: forged, Signature: bytes.Repeat([]byte{7}, 64),
		})
	}
	if err := nodetest.WaitFor(ctx, "the forged gossip signature costing its sender score at every target", func() bool {
		for _, m := range targets {
			if !slices.ContainsFunc(m.Node.P2P().PeerAbuse(), func(pa p2p.PeerAbuse) bool { return pa.ID == last.h.ID() && pa.GossipScore < 0 }) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if delivered(m, forged) {
			t.Errorf("member %d delivered an RFQ whose gossip signature does not verify", m.Index)
		}
	}

	// The next release: no signature, no author, and it refuses both.
	next := newBareClient(t, ctx, c, []pubsub.Option{pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor()}, targets, rfqTopic)
	// The renter publishes on RFQ topics without joining them.
	if err := next.h.Connect(ctx, peer.AddrInfo{ID: renter.Node.ID(), Addrs: []ma.Multiaddr{renter.Addr}}); err != nil {
		t.Fatal(err)
	}
	sub, err := next.topics[rfqTopic].Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := nodetest.WaitFor(ctx, "the renter seeing the next release's node on the RFQ topic", func() bool {
		return slices.Contains(renter.Node.P2P().ListTopicPeers(rfqTopic), next.h.ID())
	}); err != nil {
		t.Fatal(err)
	}
	ours := a10RFQBy(t, renter.Key, "this-release-004")
	relayed := a10RFQBy(t, other, "relayed-nonce-02")
	if err := renter.Node.P2P().Publish(ctx, rfqTopic, ours, 1); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("the next release's node never took this release's RFQ: %v", err)
		}
		if bytes.Equal(msg.Data, ours) {
			if len(msg.Signature) > 0 || len(msg.From) > 0 || len(msg.Seqno) > 0 {
				t.Fatalf("this release's RFQ arrived with a signature, author or sequence number")
			}
			break
		}
	}

	if err := next.topics[rfqTopic].Publish(ctx, relayed); err != nil {
		t.Fatal(err)
	}
	deliveredAtAll("an unsigned RFQ relayed for another renter", relayed)
	if p, score, at := abuse(next.h.ID()); p > 0 || score < 0 {
		t.Fatalf("member %d charged the next release's node %v points (gossip score %v) for an honest unsigned RFQ", at, p, score)
	}

	spoiled := a10RFQBy(t, next.h.Peerstore().PrivKey(next.h.ID()), "spoiled-nonce-05")
	spoiled[len(spoiled)-1] ^= 1
	if err := next.topics[rfqTopic].Publish(ctx, spoiled); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the spoiled RFQ charged to its sender", func() bool {
		p, _, _ := abuse(next.h.ID())
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

// sendRawRPC writes one gossipsub RPC carrying msg to target on a stream
// of its own, as a peer that builds its messages by hand would.
func sendRawRPC(t *testing.T, ctx context.Context, h host.Host, target peer.ID, msg *pb.Message) {
	t.Helper()
	s, err := h.NewStream(ctx, target, p2p.GossipProtocol)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(&pb.RPC{Publish: []*pb.Message{msg}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(append(binary.AppendUvarint(nil, uint64(len(raw))), raw...)); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
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
