package p2p

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A peer whose identify keeps failing is reconnected once per backoff,
// not on every failure, and the peers remembered stay bounded.
func TestIdentifyRetriesBackOff(t *testing.T) {
	r := identifyRetries{}
	t0 := time.Unix(1_700_000_000, 0)
	p := peer.ID("a")
	if !r.allow(p, t0) {
		t.Fatal("first failure: not reconnected")
	}
	if r.allow(p, t0.Add(identifyRetryBackoff-time.Second)) {
		t.Fatal("a second failure within the backoff reconnected again")
	}
	if !r.allow(peer.ID("b"), t0.Add(time.Second)) {
		t.Fatal("another peer was held back")
	}
	if !r.allow(p, t0.Add(identifyRetryBackoff)) {
		t.Fatal("after the backoff: not reconnected")
	}

	full := identifyRetries{}
	for i := range identifyRetriesKept {
		full.allow(peer.ID(fmt.Sprint(i)), t0)
	}
	if full.allow(peer.ID("new"), t0.Add(time.Second)) || len(full) != identifyRetriesKept {
		t.Fatalf("over the bound: allowed, %d kept", len(full))
	}
	if !full.allow(peer.ID("new"), t0.Add(identifyRetryBackoff)) || len(full) != 1 {
		t.Fatalf("after the backoff the old entries should go: %d kept", len(full))
	}
}
