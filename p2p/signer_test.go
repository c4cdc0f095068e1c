package p2p

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestOnlyASignedMessageHasASigner: validators and handlers get the
// gossip signer of a signed message (the router checked the signature)
// and nobody for an unsigned one, whatever its from field claims.
func TestOnlyASignedMessageHasASigner(t *testing.T) {
	claimed := peer.ID("someone")
	signed := &pubsub.Message{Message: &pb.Message{From: []byte(claimed), Signature: []byte{1}}}
	if got := gossipSigner(signed); got != claimed {
		t.Errorf("signed message: signer %q, want %q", got, claimed)
	}
	unsigned := &pubsub.Message{Message: &pb.Message{From: []byte(claimed)}}
	if got := gossipSigner(unsigned); got != "" {
		t.Errorf("unsigned message claiming %q: signer %q, want none", claimed, got)
	}
	if signaturePolicy != pubsub.LaxNoSign {
		t.Errorf("signature policy %v: this release must sign nothing (the last one accepts unsigned messages) and accept signed ones (the last one sends them)", signaturePolicy)
	}
}
