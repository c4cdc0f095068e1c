package p2p

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
)

// WaitReady polls the routing table quickly after a peer's protocols become
// known and backs off to readyPollMax otherwise. A node without peers (alone,
// or cut off from the network) waits for long; polling at a fixed 50 ms made
// each waiter (the advertiser, the digest loop) wake 20 times a second for
// as long as that lasted, the largest share of an idle provider's CPU.
const (
	readyPollMin = 50 * time.Millisecond
	readyPollMax = 2 * time.Second
)

// Ready reports whether the node can route: its DHT routing table is
// non-empty. Queries before that fail with "failed to find any peer in
// table".
func (n *Node) Ready() bool { return n.dht.RoutingTable().Size() > 0 }

// WaitReady blocks until Ready or ctx ends.
func (n *Node) WaitReady(ctx context.Context) error {
	if n.Ready() {
		return nil
	}
	// The DHT adds a peer to its table once identify (or a later protocol
	// update) shows it serves the DHT, shortly after these events: each one
	// restarts the fast polling.
	sub, err := n.host.EventBus().Subscribe([]any{
		new(event.EvtPeerIdentificationCompleted), new(event.EvtPeerProtocolsUpdated),
	})
	if err != nil {
		return fmt.Errorf("p2p: wait for non-empty routing table: subscribe: %w", err)
	}
	defer sub.Close()
	wait := readyPollMin
	t := time.NewTimer(wait)
	defer t.Stop()
	for !n.Ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("p2p.WaitReady: %w: %w", ErrNotRoutable, ctx.Err())
		case <-sub.Out():
			wait = readyPollMin
		case <-t.C:
			wait = min(2*wait, readyPollMax)
		}
		t.Reset(wait)
	}
	return nil
}
