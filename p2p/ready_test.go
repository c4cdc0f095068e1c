package p2p

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestWaitReadyAfterLatePeer: a node alone long enough for WaitReady's poll
// to back off still becomes ready soon after a peer arrives, because the
// peer's identify restarts the fast polling.
func TestWaitReadyAfterLatePeer(t *testing.T) {
	nodes := mockNet(t, 2, func(i int, c *Config) {
		if i == 1 {
			c.Bootstrap = nil // alone until the test connects it
		}
	})
	boot, lone := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- lone.WaitReady(ctx) }()

	// Past readyPollMin doubling to readyPollMax (50 ms ... 2 s).
	time.Sleep(3 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("WaitReady returned before any peer: %v", err)
	default:
	}
	connected := time.Now()
	if err := lone.host.Connect(ctx, peer.AddrInfo{ID: boot.ID(), Addrs: boot.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("ready %v after the connect", time.Since(connected).Round(time.Millisecond))
}
