package p2p

import (
	"log/slog"
	"math"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// scoreExplainEvery bounds how often one low-scored peer's score is
// explained in the log.
const scoreExplainEvery = time.Minute

// scoreInspectEvery is how often gossipsub hands the node a snapshot of
// every peer's score. The snapshot is part of the abuse pipeline, not
// only of the peers API: rpcInspector charges a peer by it while it is
// graylisted, and admission ranks peers by it. Taking one was 6 % of the
// CPU of 200 nodes forming on two cores when it was first measured, and
// 1.3 % now (docs/benchmarks.md). With snapshots 5 s apart a flooder in
// TestHostileGossipEndsGraylistedHonestFlows was never seen graylisted:
// the guard had banned it within a second on its own points, which
// clears its record and closes its connection, so the peers list no
// longer showed it at all (the test now asks the blocklist too).
const scoreInspectEvery = time.Second

// scoreWatch turns gossipsub's periodic score snapshots into the
// scores the node serves (GossipScore, the peers API) and, for a peer
// that falls below the gossip threshold, one log line saying which parts
// of the score put it there: an operator asking why a peer is cut off
// gets the answer from the log, not from reading gossipsub.
//
// gossipsub calls inspect on a goroutine of its own each time
// (score.go's inspectScoresExtended), so two calls can overlap: mu
// serialises them.
type scoreWatch struct {
	log       *slog.Logger
	set       func(map[peer.ID]float64)
	mu        sync.Mutex
	explained map[peer.ID]time.Time
}

func (w *scoreWatch) inspect(m map[peer.ID]*pubsub.PeerScoreSnapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	scores := make(map[peer.ID]float64, len(m))
	now := time.Now()
	for p, s := range m {
		scores[p] = s.Score
		if s.Score >= scoreThresholds().GossipThreshold || now.Sub(w.explained[p]) < scoreExplainEvery {
			continue
		}
		w.explained[p] = now
		invalid, firstDeliveries := 0.0, 0.0
		for _, ts := range s.Topics {
			invalid += ts.InvalidMessageDeliveries
			firstDeliveries += ts.FirstMessageDeliveries
		}
		w.log.Info("gossip: peer scored below the gossip threshold", "peer", p,
			"score", round1(s.Score), "app", round1(s.AppSpecificScore),
			"ip_colocation", round1(s.IPColocationFactor), "behaviour_penalty", round1(s.BehaviourPenalty),
			"invalid_deliveries", round1(invalid), "first_deliveries", round1(firstDeliveries))
	}
	for p := range w.explained {
		if _, ok := m[p]; !ok {
			delete(w.explained, p)
		}
	}
	w.set(scores)
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
