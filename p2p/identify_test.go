package p2p

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A peer whose identify keeps failing is reconnected once per backoff,
// not on every failure.
func TestIdentifyRetriesBackOff(t *testing.T) {
	r := newIdentifyRetries()
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

	// However many peers fail, at most identifyRedialsMax are
	// reconnected per window, and the peers remembered stay bounded.
	busy := newIdentifyRetries()
	allowed := 0
	for i := range 1000 {
		if busy.allow(peer.ID(fmt.Sprint(i)), t0.Add(time.Duration(i)*time.Second)) {
			allowed++
		}
	}
	if want := 1000 * identifyRedialsMax / int(identifyRedialsWindow/time.Second); allowed > want+identifyRedialsMax {
		t.Fatalf("%d peers reconnected in 1000 s, want at most about %d", allowed, want)
	}
	if kept, most := len(busy.last), identifyRedialsMax*int(identifyRetryBackoff/identifyRedialsWindow)+1; kept > most {
		t.Fatalf("%d peers remembered, want at most %d", kept, most)
	}
}
