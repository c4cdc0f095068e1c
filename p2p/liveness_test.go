package p2p

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// TestSilentPeerIsDisconnected: a connected peer that answers pings is
// live; one whose pings go unanswered (as a killed QUIC peer's do) is
// silent, twice in a row (watchLiveness then closes its connections).
func TestSilentPeerIsDisconnected(t *testing.T) {
	nodes := mockNet(t, 3, nil)
	a, live, dead := nodes[0], nodes[1].ID(), nodes[2]
	waitFor(t, "connections", 20*time.Second, func() bool {
		return a.host.Network().Connectedness(live) == network.Connected && a.host.Network().Connectedness(dead.ID()) == network.Connected
	})
	if a.silent(t.Context(), live) {
		t.Fatal("a peer that answers pings was found silent")
	}
	// The dead peer reads pings and never answers; its own liveness
	// pings and its gossip, which a dead peer would not send, go unnoted
	// at a.
	dead.host.SetStreamHandler(ping.ID, func(s network.Stream) { _, _ = io.Copy(io.Discard, s) })
	dead.psCancel()
	a.host.SetStreamHandler(ping.ID, (&ping.PingService{Host: a.host}).PingHandler)
	start := time.Now()
	if !a.silent(t.Context(), dead.ID()) {
		t.Fatal("a peer that never answers was found live")
	}
	if took := time.Since(start); took < 2*livenessTimeout {
		t.Fatalf("silent after %s, want two full timeouts (%s each)", took, livenessTimeout)
	}
}

// TestManySilentPeersAreKept: the silent peers of a round are closed when
// they are few; when many fall silent at once, or more than answered
// (this node is the likelier cause), none are.
func TestManySilentPeersAreKept(t *testing.T) {
	ids := func(n int) []peer.ID {
		out := make([]peer.ID, n)
		for i := range out {
			out[i] = peer.ID(fmt.Sprint(i))
		}
		return out
	}
	const prompt = 80 * time.Millisecond
	for _, c := range []struct {
		silent, probed, closed int
		typical                time.Duration
	}{
		{1, 1, 0, 0}, // this node's only peer: kept
		{1, 2, 1, prompt},
		{2, 3, 0, prompt}, // more silent than answered
		{2, 4, 2, prompt},
		{3, 3, 0, 0},
		{8, 100, 8, prompt},
		{12, 100, 12, prompt},
		{13, 100, 0, prompt},
		{100, 100, 0, 0},
		{1, 100, 1, livenessSlow},
		{1, 100, 0, livenessSlow + time.Millisecond}, // the answers slow: this node or its link
	} {
		if got := len(silentToClose(ids(c.silent), c.probed, c.typical)); got != c.closed {
			t.Errorf("%d silent of %d probed, answers in %s: %d closed, want %d", c.silent, c.probed, c.typical, got, c.closed)
		}
	}
}

// TestRoundMedianRTT: a round's typical answer is the median of its round
// trips, and each round counts afresh.
func TestRoundMedianRTT(t *testing.T) {
	s := newPingsSeen()
	now := time.Now()
	for i, ms := range []int{5, 4000, 30, 20, 3000} {
		s.answered(peer.ID(fmt.Sprint(i)), now, time.Duration(ms)*time.Millisecond)
	}
	if got := s.endRound(); got != 30*time.Millisecond {
		t.Fatalf("median %s, want 30ms", got)
	}
	if got := s.endRound(); got != 0 {
		t.Fatalf("a round without answers: %s, want 0", got)
	}
}

// neverAnswerPings makes n read pings and never answer them, as a peer
// too busy to would; the channel receives when the first arrives.
func neverAnswerPings(n *Node) <-chan struct{} {
	probed := make(chan struct{}, 1)
	n.host.SetStreamHandler(ping.ID, func(s network.Stream) {
		select {
		case probed <- struct{}{}:
		default:
		}
		_, _ = io.Copy(io.Discard, s)
	})
	return probed
}

// TestPeerThatPingsUsIsNotSilent: a peer too busy to answer this node's
// pings in time, but whose own ping reached this node meanwhile, is live.
func TestPeerThatPingsUsIsNotSilent(t *testing.T) {
	nodes := mockNet(t, 2, nil)
	a, busy := nodes[0], nodes[1]
	waitFor(t, "connection", 20*time.Second, func() bool {
		return a.host.Network().Connectedness(busy.ID()) == network.Connected
	})
	probed := neverAnswerPings(busy)
	go func() { // its own ping, once a's first arrived
		<-probed
		_ = ping.Ping(network.WithAllowLimitedConn(t.Context(), "test"), busy.host, a.ID())
	}()
	if a.silent(t.Context(), busy.ID()) {
		t.Fatal("a peer that pinged this node during the probe was found silent")
	}
}

// TestPeerThatGossipsIsNotSilent: a peer too busy to answer this node's
// pings in time, but whose gossip reached this node meanwhile, is live
// (a round skips peers heard from, by gossip or ping alike:
// TestProbeSkipsPeersThatPingedUs).
func TestPeerThatGossipsIsNotSilent(t *testing.T) {
	nodes := mockNet(t, 3, nil)
	a, busy := nodes[1], nodes[2]
	ctx := t.Context()
	got := make(chan struct{}, 1)
	if err := a.Subscribe(ctx, TopicAttest, func(Message) {
		select {
		case got <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := busy.Subscribe(ctx, TopicAttest, func(Message) {}); err != nil {
		t.Fatal(err)
	}
	// The two meet through the bootstrap peer's DHT only if a lookup
	// happens to dial; the attest topic is never looked up (every node
	// joins it), so connect them.
	if err := a.host.Connect(ctx, peer.AddrInfo{ID: busy.ID(), Addrs: busy.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a topic peer", 20*time.Second, func() bool { return slices.Contains(a.ListTopicPeers(TopicAttest), busy.ID()) })
	probed := neverAnswerPings(busy)
	// Its own liveness pings go unnoted at a: only its gossip speaks
	// for it.
	a.host.SetStreamHandler(ping.ID, (&ping.PingService{Host: a.host}).PingHandler)
	go func() { // its gossip, once a's first ping arrived
		<-probed
		_ = busy.Publish(ctx, TopicAttest, []byte("still here"), 1)
	}()
	if a.silent(ctx, busy.ID()) {
		t.Fatal("a peer whose gossip reached this node during the probe was found silent")
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the gossip was not delivered, so the test proved nothing")
	}
}

// TestProbeSkipsPeersThatPingedUs: a round probes a peer that pinged this
// node within the round only when its round trip was last measured over
// livenessMeasureEvery ago, and it forgets peers no longer connected.
func TestProbeSkipsPeersThatPingedUs(t *testing.T) {
	s := newPingsSeen()
	now := time.Now()
	quiet, pinger, stale, gone := peer.ID("quiet"), peer.ID("pinger"), peer.ID("stale"), peer.ID("gone")
	s.heardFrom(pinger, now.Add(-livenessEvery/2))
	s.answered(pinger, now.Add(-livenessMeasureEvery/2), time.Millisecond)
	s.heardFrom(stale, now.Add(-livenessEvery/2))
	s.answered(stale, now.Add(-livenessMeasureEvery-time.Second), time.Millisecond)
	s.heardFrom(gone, now)
	s.answered(gone, now, time.Millisecond)
	got := s.toProbe([]peer.ID{quiet, pinger, stale}, now)
	if fmt.Sprint(got) != fmt.Sprint([]peer.ID{quiet, stale}) {
		t.Fatalf("probed %v, want the quiet peer and the one measured too long ago", got)
	}
	if s.heardSince(gone, now) {
		t.Fatal("a peer no longer connected is still remembered")
	}
	// A ping a round ago no longer vouches.
	if got := s.toProbe([]peer.ID{pinger}, now.Add(livenessEvery)); len(got) != 1 {
		t.Fatalf("probed %v a round later, want the peer", got)
	}
}
