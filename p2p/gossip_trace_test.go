package p2p

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Messages gossipsub drops because the node cannot keep up are counted by
// where, so an operator sees a node missing honest messages.
func TestOverloadDropsAreCounted(t *testing.T) {
	n := mockNet(t, 1, nil)[0]
	tr := newGossipTrace(n)
	tr.RejectMessage(&pubsub.Message{Message: &pb.Message{}}, pubsub.RejectValidationQueueFull)
	tr.RejectMessage(&pubsub.Message{Message: &pb.Message{}}, pubsub.RejectValidationThrottled)
	tr.RejectMessage(&pubsub.Message{Message: &pb.Message{}}, pubsub.RejectValidationFailed) // a verdict, counted elsewhere
	tr.DropRPC(&pubsub.RPC{RPC: pb.RPC{Publish: []*pb.Message{{}, {}}}}, "p")
	tr.DropRPC(&pubsub.RPC{RPC: pb.RPC{Control: &pb.ControlMessage{}}}, "p") // no message lost
	for where, want := range map[string]float64{"validation_queue": 1, "validation_throttled": 1, "send_queue": 2} {
		if got := testutil.ToFloat64(n.metrics.overload.WithLabelValues(where)); got != want {
			t.Errorf("%s: %v drops counted, want %v", where, got, want)
		}
	}
	if got := testutil.CollectAndCount(n.metrics.overload); got != 3 {
		t.Errorf("%d series, want 3", got)
	}
}
