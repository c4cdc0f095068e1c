package p2p

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestScoreWatchOverlappingInspections: gossipsub calls the score
// inspector on a new goroutine each time, so calls overlap on a busy
// node; the watch must survive that (run with -race) and serve the
// scores of a snapshot.
func TestScoreWatchOverlappingInspections(t *testing.T) {
	var mu sync.Mutex
	var last map[peer.ID]float64
	w := &scoreWatch{
		log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		set:       func(m map[peer.ID]float64) { mu.Lock(); last = m; mu.Unlock() },
		explained: map[peer.ID]time.Time{},
	}
	low := scoreThresholds().GossipThreshold - 1
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			snap := map[peer.ID]*pubsub.PeerScoreSnapshot{}
			for j := range 50 {
				snap[peer.ID(rune('a'+i))+peer.ID(rune('a'+j))] = &pubsub.PeerScoreSnapshot{Score: low}
			}
			w.inspect(snap)
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(last) != 50 {
		t.Fatalf("the last snapshot served %d scores, want 50", len(last))
	}
	for p, s := range last {
		if s != low {
			t.Fatalf("peer %q served score %v, want %v", p, s, low)
		}
	}
}
