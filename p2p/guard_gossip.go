package p2p

import (
	"context"
	"slices"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// GuardValidator wraps a topic validator so that its verdicts cost the
// forwarding peer: Ignore is charged AbuseGossipIgnore and Reject
// AbuseGossipReject (on top of gossipsub's own penalty for invalid
// messages); Withhold and Skip cost nothing. Our own messages are never
// charged. RegisterValidator applies
// it to every validator, so the node must not wrap a second time.
func (g *Guard) GuardValidator(self peer.ID, v RecordValidator) RecordValidator {
	return func(ctx context.Context, from, signer peer.ID, data []byte) (Verdict, any) {
		verdict, rec := v(ctx, from, signer, data)
		if from == self {
			return verdict, rec
		}
		switch verdict {
		case Ignore:
			g.Charge(from, AbuseGossipIgnore, 0)
		case Reject:
			g.Charge(from, AbuseGossipReject, 0)
		}
		return verdict, rec
	}
}

// rpcInspector throttles each peer's published messages before gossipsub
// looks at them, so a flood costs one map lookup per message rather than
// a signature check: messages over the peer's budget are cut from the RPC
// (its control part is kept) and charged. It runs on gossipsub's event
// loop and must stay cheap.
//
// A graylisted peer's RPCs are dropped by gossipsub right after this, so
// its messages cost nothing more, and its points would decay until it is
// let back in to abuse again. Every message it keeps pushing while
// graylisted is therefore charged AbuseGossipGraylisted: a peer that does
// not stop ends banned.
//
// Messages this node itself signed are cut first, uncharged. After a
// restart a node has forgotten which messages it saw, asks its peers for
// the recent ones they advertise (IWANT), its own earlier messages
// included, and relays the ones of others straight back to their authors.
// Gossipsub rejects a message from oneself as self-originated and counts
// it against the honest peer that delivered it as an invalid message: a
// few of those, at our invalid-message weight, graylisted that peer and
// the abuse guard then banned it, for nothing but a restart. This release
// signs nothing (signaturePolicy), so the messages cut are those a node
// signed before its upgrade to it, which is such a restart. An unsigned
// message of its own names no author, so gossipsub does not take it for
// self-originated: it is validated like any other.
//
// Messages within the peer's budget then pass admit (entryChecks), which
// cuts, uncharged, those a topic's entry check refuses.
func (g *Guard) rpcInspector(self peer.ID, graylisted func(peer.ID) bool, throttled func(n int), admit func(peer.ID, *pb.Message) bool) func(peer.ID, *pubsub.RPC) error {
	return func(from peer.ID, rpc *pubsub.RPC) error {
		rpc.Publish = slices.DeleteFunc(rpc.Publish, func(m *pb.Message) bool { return peer.ID(m.GetFrom()) == self })
		if len(rpc.Publish) == 0 {
			return nil
		}
		if graylisted != nil && graylisted(from) {
			g.Charge(from, AbuseGossipGraylisted, float64(len(rpc.Publish))*g.Penalty(AbuseGossipGraylisted))
			return nil
		}
		kept := rpc.Publish[:0]
		dropped := 0
		for _, m := range rpc.Publish {
			switch {
			case !g.Allow(from):
				dropped++
			case admit == nil || admit(from, m):
				kept = append(kept, m)
			}
		}
		rpc.Publish = kept
		if dropped > 0 {
			g.Charge(from, AbuseGossipRate, float64(dropped)*g.Penalty(AbuseGossipRate))
			if throttled != nil {
				throttled(dropped)
			}
		}
		return nil
	}
}
