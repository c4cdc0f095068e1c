package p2p

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Verdict is a topic validator's decision about one message.
type Verdict int

const (
	// Accept delivers and forwards the message.
	Accept Verdict = iota
	// Reject drops it and penalises the peer that forwarded it: use for
	// provably bad messages (bad signature, malformed).
	Reject
	// Ignore drops it without penalty: stale, duplicate, not for us.
	// (The abuse guard still charges the forwarder a point: a peer that
	// keeps sending what is ignored makes us work for nothing.)
	Ignore
	// Withhold drops it like Ignore but charges nobody: the message is
	// valid and an honest peer may well send it, but this node will not
	// pass it on now. The node keeps what it needs (a claim it checks
	// before it believes it; work over a budget shared by many senders).
	Withhold
	// Skip drops it with no penalty or charge at all: a message this node
	// cannot judge because another release of the protocol wrote it (a
	// record version or fields it does not know). An honest upgraded peer
	// must not lose standing with older ones (docs/protocol.md,
	// "Compatibility").
	Skip
)

// Validator inspects a message's payload before anything else sees it.
// from is the peer that forwarded it; signer is the peer that signed the
// gossip message, "" when the message carries no gossip signature (a
// later release's: see signaturePolicy). A validator takes the author
// from the signed record inside data and, when signer is not "", requires
// the two to be the same.
type Validator func(ctx context.Context, from, signer peer.ID, data []byte) Verdict

// RecordValidator is a Validator that also hands on what it opened of a
// message it accepts: its record, signature checked. Subscribers get it as
// Message.Record, so a record's signature is checked once per message
// rather than again by every step after the validator (Ed25519 checks
// were a fifth of a busy provider's CPU, half of them repeats).
type RecordValidator func(ctx context.Context, from, signer peer.ID, data []byte) (Verdict, any)

// NoRecord is v as a RecordValidator that hands nothing on.
func NoRecord(v Validator) RecordValidator {
	return func(ctx context.Context, from, signer peer.ID, data []byte) (Verdict, any) {
		return v(ctx, from, signer, data), nil
	}
}

// bootstrapScore lifts bootstrap peers above AcceptPXThreshold, so peer
// exchange from them is trusted (the Lotus pattern).
const bootstrapScore = 1500

// contentID names a message by the hash of its topic and payload, so the
// same signed record relayed by two publishers is delivered once per
// topic, and one record published on several topics (an RFQ for two GPU
// shards) reaches each.
func contentID(m *pb.Message) string {
	h := sha256.New()
	h.Write([]byte(m.GetTopic()))
	h.Write([]byte{0})
	h.Write(m.Data)
	return string(h.Sum(nil))
}

// gossipFeatures declares what our private protocol ID supports: mesh,
// peer exchange and IDONTWANT, exactly gossipsub v1.2.
func gossipFeatures(feat pubsub.GossipSubFeature, p protocol.ID) bool {
	if p != GossipProtocol {
		return false
	}
	switch feat {
	case pubsub.GossipSubFeatureMesh, pubsub.GossipSubFeaturePX, pubsub.GossipSubFeatureIdontwant:
		return true
	default:
		return false
	}
}

// gossipDlazy is how many non-mesh topic peers a node sends IHAVE to at
// each heartbeat: a fixed number, not the library's quarter of all its
// non-mesh peers (GossipFactor 0.25). IHAVE was most of the gossip
// control bytes and, with the factor, grew with a node's topic peers: a
// message cost each subscriber about 27 B of IHAVE per topic peer, 5.2 kB
// at the connection manager's 192 peers, as much as the message's own
// copies (docs/benchmarks.md, issue 26). With a fixed 8 it is about
// 3 heartbeats x 8 peers x 34 B per message at any size. Repair does not
// depend on the factor: every holder of a message still advertises it
// to 8 random non-mesh peers for three heartbeats, so a node whose mesh
// lost a message hears of it in about 24 x (holders / its peers)
// advertisements, 19 with 150 holders among 192 peers.
const gossipDlazy = 8

// gossipDhi is the most mesh peers a node keeps in a topic before its
// heartbeat prunes it back to D (6): the library's 12 let meshes sit
// near 8 to 9 peers as others grafted on, and a node receives a message
// about once from each mesh peer, so every gossiped byte arrived about
// 8 times. With 8, copies per message fell from 7.3-8.3 to 6.5-6.9 at
// 50 and 100 nodes, and the gossip p95 did not rise (docs/benchmarks.md,
// issue 26).
// D, Dlo (5) and Dout (2), which make a mesh hard to eclipse, are the
// library's.
const gossipDhi = 8

func gossipParams(cfg *Config) pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.Dlazy, p.GossipFactor = gossipDlazy, 0
	p.Dhi = gossipDhi
	p.HeartbeatInterval = cfg.GossipHeartbeat
	if cfg.GossipHeartbeat < p.HeartbeatInitialDelay {
		p.HeartbeatInitialDelay = cfg.GossipHeartbeat
	}
	if cfg.Bootstrapper {
		// Bootstrap peers route no messages of their own: no mesh, only
		// gossip emission and peer exchange.
		p.D, p.Dlo, p.Dhi, p.Dout, p.Dscore = 0, 0, 0, 0, 0
		p.Dlazy = 12
	}
	return p
}

// topicScoreParams are the same for every topic, static or joined later.
func topicScoreParams() *pubsub.TopicScoreParams {
	return &pubsub.TopicScoreParams{
		TopicWeight: 0.5,
		// P1: a little credit for staying in the mesh.
		TimeInMeshWeight:  0.00027,
		TimeInMeshQuantum: time.Second,
		TimeInMeshCap:     3600,
		// P2: credit for delivering messages first.
		FirstMessageDeliveriesWeight: 5,
		FirstMessageDeliveriesDecay:  pubsub.ScoreParameterDecay(10 * time.Minute),
		FirstMessageDeliveriesCap:    100,
		// P3 (mesh delivery rate) stays off: in a small network it
		// prunes honest but quiet peers.
		// P4: invalid messages cost a lot and are remembered for hours.
		InvalidMessageDeliveriesWeight: -1000,
		InvalidMessageDeliveriesDecay:  pubsub.ScoreParameterDecay(time.Hour),
	}
}

const graylistThreshold = -2500

// scoreThresholds: a peer below -500 gets no gossip from us, below -1000
// none of our publications, below -2500 (graylisted) its RPCs are ignored.
func scoreThresholds() *pubsub.PeerScoreThresholds {
	return &pubsub.PeerScoreThresholds{
		GossipThreshold:             -500,
		PublishThreshold:            -1000,
		GraylistThreshold:           graylistThreshold,
		AcceptPXThreshold:           1000,
		OpportunisticGraftThreshold: 3.5,
	}
}

// scoreParams weighs peers. The application score is the configured one
// plus the abuse guard's (negative, by abuse points) plus a bonus for
// bootstrap peers.
func scoreParams(cfg *Config, isBootstrap func(peer.ID) bool, guard *Guard) (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds) {
	app := cfg.AppScore
	topics := make(map[string]*pubsub.TopicScoreParams, len(cfg.Topics))
	for _, t := range cfg.Topics {
		topics[t] = topicScoreParams()
	}
	params := &pubsub.PeerScoreParams{
		Topics:            topics,
		TopicScoreCap:     100,
		AppSpecificWeight: 1,
		AppSpecificScore: func(p peer.ID) float64 {
			s := 0.0
			if isBootstrap(p) {
				s += bootstrapScore
			}
			if app != nil {
				s += app(p)
			}
			if guard != nil {
				s += guard.AppScore(p)
			}
			return s
		},
		// P6: many peers from one IP is suspicious; loopback is exempt.
		IPColocationFactorWeight:    -100,
		IPColocationFactorThreshold: 5,
		// P7: misbehaviour (GRAFT during a prune backoff, IWANT promises
		// not kept). An honest peer that restarts within the minute-long
		// backoff its shutdown left (leaving a topic PRUNEs it) re-GRAFTs at
		// once and collects some 10-20 of these per restart, and a kill -9
		// breaks the promises it made just before. With Lotus' threshold of
		// 6 and hourly decay two restarts in an hour cut a provider off
		// from RFQs (below the publish threshold) and a third graylisted
		// it. Above 20 the penalty starts, decaying in 10 minutes: a GRAFT
		// flood (two points per GRAFT per topic) is still past it within
		// seconds, a restart is forgiven.
		BehaviourPenaltyWeight:    -10,
		BehaviourPenaltyThreshold: 20,
		BehaviourPenaltyDecay:     pubsub.ScoreParameterDecay(10 * time.Minute),
		DecayInterval:             pubsub.DefaultDecayInterval,
		DecayToZero:               pubsub.DefaultDecayToZero,
		RetainScore:               6 * time.Hour,
	}
	return params, scoreThresholds()
}

// signaturePolicy: every record idlegrid gossips is signed by its author
// inside the payload, and every validator checks that signature, so
// gossipsub's own signature over the message is paid twice: at 200 nodes
// its checks were 5.4 % of all CPU while forming and 10 % once formed, and
// its from, seqno and signature fields about 110 bytes of every copy (a
// seventh of an RFQ's). Dropping it changes what peers accept, so it goes
// in three releases:
//
//  1. the last one signs, since the releases before it (StrictSign) drop
//     unsigned messages, and accepts unsigned ones; validators take the
//     author from the record;
//  2. this one signs nothing and sets neither from nor seqno (LaxNoSign
//     with pubsub.WithNoAuthor, in newPubSub). It still accepts the last
//     release's signed messages, and the router still checks a signature
//     that is present, so a forged one is rejected;
//  3. the next refuses signed messages (StrictNoSign), and no node checks
//     a gossip signature again.
const signaturePolicy = pubsub.LaxNoSign

// gossipSigner is the peer that signed m's gossip envelope, which the
// router has verified before any validator runs; "" for an unsigned
// message, whose from field nothing vouches for.
func gossipSigner(m *pubsub.Message) peer.ID {
	if len(m.GetSignature()) == 0 {
		return ""
	}
	return peer.ID(m.GetFrom())
}

// newPubSub starts gossipsub bound to ctx (pubsub has no Close: cancelling
// ctx stops it). disc finds topic peers through the DHT.
func newPubSub(ctx context.Context, h host.Host, cfg *Config, disc discovery.Discovery, isBootstrap func(peer.ID) bool, inspect func(map[peer.ID]*pubsub.PeerScoreSnapshot), g gossipGuard, trace pubsub.RawTracer) (*pubsub.PubSub, error) {
	sp, th := scoreParams(cfg, isBootstrap, g.guard)
	opts := []pubsub.Option{
		pubsub.WithGossipSubProtocols([]protocol.ID{GossipProtocol}, gossipFeatures),
		pubsub.WithGossipSubParams(gossipParams(cfg)),
		pubsub.WithMessageSignaturePolicy(signaturePolicy),
		pubsub.WithNoAuthor(), // after the policy, which it amends
		pubsub.WithMessageIdFn(contentID),
		pubsub.WithMaxMessageSize(cfg.MaxMessageSize),
		pubsub.WithFloodPublish(true),
		pubsub.WithValidateQueueSize(256),
		pubsub.WithPeerOutboundQueueSize(128),
		pubsub.WithSubscriptionFilter(pubsub.WrapLimitSubscriptionFilter(topicFilter{cfg}, cfg.maxTopics())),
		pubsub.WithPeerScore(sp, th),
		pubsub.WithPeerExchange(cfg.Bootstrapper),
		pubsub.WithBlacklist(gossipBlacklist{g.blocklist}),
		pubsub.WithAppSpecificRpcInspector(g.guard.rpcInspector(h.ID(), g.graylisted, g.throttled, g.admit)),
		pubsub.WithPeerScoreInspect(pubsub.ExtendedPeerScoreInspectFn(inspect), scoreInspectEvery),
		pubsub.WithRawTracer(trace),
	}
	if disc != nil {
		opts = append(opts, pubsub.WithDiscovery(disc))
	}
	ps, err := pubsub.NewGossipSub(ctx, h, opts...)
	if err != nil {
		return nil, fmt.Errorf("p2p: gossipsub: %w", err)
	}
	return ps, nil
}

// gossipGuard is what gossipsub needs of the abuse guard: scores, the
// blocklist as its blacklist, and the per-peer throttle.
type gossipGuard struct {
	guard      *Guard
	blocklist  *Blocklist
	graylisted func(peer.ID) bool
	throttled  func(n int)
	admit      func(peer.ID, *pb.Message) bool // entryChecks
}

// topicFilter admits the static topics and those the topic policy allows.
type topicFilter struct{ cfg *Config }

func (f topicFilter) CanSubscribe(topic string) bool { return f.cfg.allowed(topic) }

func (f topicFilter) FilterIncomingSubscriptions(_ peer.ID, subs []*pb.RPC_SubOpts) ([]*pb.RPC_SubOpts, error) {
	return pubsub.FilterSubscriptions(subs, f.CanSubscribe), nil
}
