package p2p

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// MeasureRTT pings p with libp2p ping (samples round trips over one
// stream) and returns the mean round-trip time. Each sample also updates
// the peerstore's latency estimate, which is what the matcher reads.
func (n *Node) MeasureRTT(ctx context.Context, p peer.ID, samples int) (time.Duration, error) {
	if samples < 1 {
		samples = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the pinging goroutine
	var sum time.Duration
	got := 0
	for res := range ping.Ping(ctx, n.host, p) {
		if res.Error != nil {
			return 0, fmt.Errorf("p2p: ping %s: %w", p, res.Error)
		}
		sum += res.RTT
		if got++; got == samples {
			return sum / time.Duration(got), nil
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("p2p: ping %s: %w", p, err)
	}
	return 0, errors.New("p2p: ping " + p.String() + ": ended without a reply")
}
