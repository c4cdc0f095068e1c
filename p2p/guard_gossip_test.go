package p2p

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// A restarted node's own earlier messages, delivered back to it by an
// honest peer it asked for them, are cut from the RPC before gossipsub
// would reject them as self-originated and count them against that peer;
// the peer is charged nothing. Other messages pass.
func TestRPCInspectorDropsOwnMessagesUncharged(t *testing.T) {
	g := guardAt(newFakeClock(), DefaultGuardConfig(), GuardDeps{})
	self, from, other := testPeer(1), testPeer(2), testPeer(3)
	inspect := g.rpcInspector(self, nil, nil, nil)
	rpc := &pubsub.RPC{RPC: pb.RPC{Publish: []*pb.Message{
		{From: []byte(self), Data: []byte("mine, from before the restart")},
		{From: []byte(other), Data: []byte("theirs")},
		{From: []byte(self), Data: []byte("mine again")},
	}}}
	if err := inspect(from, rpc); err != nil {
		t.Fatal(err)
	}
	if len(rpc.Publish) != 1 || string(rpc.Publish[0].Data) != "theirs" {
		t.Fatalf("kept %d messages: %v", len(rpc.Publish), rpc.Publish)
	}
	if p := g.Points(from); p != 0 {
		t.Fatalf("the delivering peer was charged %v points", p)
	}
}
